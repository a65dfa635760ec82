# The labctl pytest plugin is registered through the `pytest11` entry point in pyproject.toml;
# nothing to register here.
