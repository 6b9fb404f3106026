"""Values read out of a frame, as plain Python."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd


def plain(x: Any) -> Any:
    """A value read from a frame as plain Python: pandas' and numpy's missing values (None, NA,
    NaN, NaT) as None, numpy scalars as Python scalars; anything else as it is."""
    if x is None or x is pd.NA or x is pd.NaT:
        return None
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and math.isnan(x):
        return None
    return x
