"Package metadata, read from settings.ini (nbdev 2 convention)."
from configparser import ConfigParser
import shlex
import setuptools

cfg = ConfigParser(delimiters=['='])
cfg.read('settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']

def _reqs(key):
    "Requirement strings of one settings.ini key."
    return shlex.split(cfg.get(key, ''))

setuptools.setup(
    name=cfg['lib_name'], version=cfg['version'], description=cfg['description'],
    author=cfg['author'], author_email=cfg['author_email'], license='Apache-2.0',
    keywords=cfg['keywords'].split(), url=cfg['git_url'], project_urls={'Source': cfg['git_url']},
    long_description=open('README.md', encoding='utf-8').read() if __import__('os').path.exists('README.md') else cfg['description'],
    long_description_content_type='text/markdown',
    classifiers=['Programming Language :: Python :: 3.11', 'License :: OSI Approved :: Apache Software License'],
    python_requires=f">={cfg['min_python']}", packages=setuptools.find_packages(include=['workbench', 'workbench.*']),
    include_package_data=True, install_requires=_reqs('requirements'),
    extras_require={'dev': _reqs('dev_requirements'), 'vllm': ['vllm']},
    entry_points={'console_scripts': cfg['console_scripts'].split(), 'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    zip_safe=False)
