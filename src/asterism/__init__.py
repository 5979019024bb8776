"""asterism: AMD GPU assembly with the rigor of a compiler and the control of hand-written code."""

__version__ = "0.1.0"
