"""The analysis helpers preloaded in every rlm namespace: map_reduce, find_relevant, extract_functions.

Pure functions over text that return plain data (str, list, dict, tuple, float) and raise text-only errors.
"""

from rlm_kernel.analysis.errors import (
    AnalysisError,
    AnalysisInputError,
    FindRelevantError,
    MapReduceError,
)
from rlm_kernel.analysis.extract import extract_functions
from rlm_kernel.analysis.find_relevant import find_relevant
from rlm_kernel.analysis.map_reduce import map_reduce

__all__ = [
    "AnalysisError",
    "AnalysisInputError",
    "FindRelevantError",
    "MapReduceError",
    "extract_functions",
    "find_relevant",
    "map_reduce",
]
