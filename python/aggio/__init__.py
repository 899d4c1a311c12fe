"""aggio: reports and findings with concrete fixes, from aggio traces and
Darshan logs."""
__version__ = "0.1.0"
