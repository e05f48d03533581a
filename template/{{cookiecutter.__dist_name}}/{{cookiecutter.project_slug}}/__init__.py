"""{{ cookiecutter.project_name }}.

LangGraph graphs served as OpenAI-compatible models by LGOS (`registry.py` lists them).
"""
