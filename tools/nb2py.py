"Print a notebook as a jupytext percent script (for editing with tools/py2nb.py)."
import sys
import jupytext

nb = jupytext.read(sys.argv[1])
sys.stdout.write(jupytext.writes(nb, fmt='py:percent'))
