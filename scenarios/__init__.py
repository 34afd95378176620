"""The jobs that ship with crashlab, as YAML files to open and copy; installed as crashlab.scenarios."""
