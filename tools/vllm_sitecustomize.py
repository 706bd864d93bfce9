"""Installed as sitecustomize.py in the vLLM CPU venv (tools/venv_vllm.sh).

dynamo.vllm imports `transformers.models.qwen2_vl.image_processing_qwen2_vl.smart_resize` at start-up; that module
needs torchvision, which this venv leaves out (the PyPI wheels do not match the CPU torch). Text models never call
it, so a stand-in module is registered whose `smart_resize` raises a clear error if anything does call it."""
import sys, types

_NAME = 'transformers.models.qwen2_vl.image_processing_qwen2_vl'

def _smart_resize(*args, **kwargs):
    raise RuntimeError('smart_resize needs torchvision, which the workbench vLLM CPU venv (.venv-vllm) leaves out: it serves '
                       'text models only. Serve image models from a GPU venv with a torchvision that matches its torch.')

if _NAME not in sys.modules:
    _m = types.ModuleType(_NAME, 'Stand-in without torchvision (see sitecustomize.py in this venv)')
    _m.smart_resize = _smart_resize
    sys.modules[_NAME] = _m
