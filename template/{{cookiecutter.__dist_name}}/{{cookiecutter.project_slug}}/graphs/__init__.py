"""The service's graphs. Each module builds one compiled graph; `registry.py` names them."""
