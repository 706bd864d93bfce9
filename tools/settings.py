"Print one settings.ini key (the single place where the stack is pinned)."
import sys
from configparser import ConfigParser
from pathlib import Path

cfg = ConfigParser(delimiters=['='])
cfg.read(Path(__file__).resolve().parents[1] / 'settings.ini', encoding='utf-8')
print(cfg['DEFAULT'][sys.argv[1]])
