# The SWIG-generated layer (bindings/bitt.i). Statuses >= 0 come back as the
# first element of a tuple with the outputs; negative ones raise bitt.Error.
from typing import Any

def __getattr__(name: str) -> Any: ...
