"Print ai-dynamo's own requirements (from its installed metadata) without aisimulate, ai-dynamo-runtime and extras: one per line, for pip."
from importlib.metadata import requires
from packaging.requirements import Requirement

SKIP = {'aisimulate', 'ai-dynamo-runtime'}   # aisimulate downloads from an unreachable host; the runtime is pinned in settings.ini

for r in requires('ai-dynamo') or []:
    q = Requirement(r)
    if q.name in SKIP or (q.marker and not q.marker.evaluate({'extra': ''})): continue
    q.marker = None
    print(q)
