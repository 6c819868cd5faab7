import os
import sys

# models.py (the tiny models) for the tests here and under gpu/.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The Hub test uploads to a local server: huggingface_hub must not try Xet storage (read at
# its import, which transformers triggers).
os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
