import os
import sys

# models.py (the tiny models) for the tests here and under gpu/.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
