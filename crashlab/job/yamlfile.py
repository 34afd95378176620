"""The bounded, strict YAML reader of job files (PyYAML, imported only when a job is read)."""

from __future__ import annotations

from typing import Any

import yaml

from crashlab.errors import JobError
from crashlab.job.values import shown

#: Bounds on the YAML, checked while parsing, so that no file of at most `MAX_JOB_BYTES` exhausts memory or time.
MAX_DEPTH = 32  # nesting of YAML collections
MAX_NODES = 100_000  # YAML values, counting every use of an alias as a full copy
MAX_INT_CHARS = 20  # the written form of an integer (2**63 has 19 digits)


class JobLoader(yaml.SafeLoader):
    """PyYAML's safe loader, bounded and strict.

    It refuses what `yaml.safe_load` lets through in silence (a duplicate key, where the last one
    wins) and what costs unbounded time or memory (deep nesting, an alias bomb, an integer of
    thousands of digits), each with the line where it is.
    """

    def __init__(self, stream: str):
        super().__init__(stream)
        self.depth = 0
        self.sizes: dict[int, int] = {}  # id(node) -> its values, aliases expanded

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            return super().compose_node(parent, index)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels",
                                                  self.peek_event().start_mark)
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        children = node.value if isinstance(node, yaml.SequenceNode) else []
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        size = 1 + sum(self.sizes.get(id(child), 1) for child in children)
        if size > MAX_NODES:
            raise yaml.composer.ComposerError(None, None, f"more than {MAX_NODES} values once aliases are expanded",
                                              node.start_mark if node is not None else None)
        self.sizes[id(node)] = size
        return node

    def construct_mapping(self, node, deep=False):
        first: dict[Any, int] = {}  # key -> the line it first appeared on
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                line = first.get(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(None, None, "a mapping key must be a plain value",
                                                        key_node.start_mark) from None
            if line is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {shown(key)} (first on line {line + 1})", key_node.start_mark)
            first[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        if len(node.value) > MAX_INT_CHARS:
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {len(node.value)} characters (at most {MAX_INT_CHARS})", node.start_mark)
        return super().construct_yaml_int(node)


JobLoader.add_constructor("tag:yaml.org,2002:int", JobLoader.construct_yaml_int)


def parse_yaml(text: str, source: str) -> Any:
    """The one YAML document in `text`, or a `JobError` with the line and the problem on one line."""
    loader = None
    try:
        loader = JobLoader(text)  # the reader checks every character here, before parsing
        return loader.get_single_data()
    except yaml.reader.ReaderError as error:
        code = error.character if isinstance(error.character, int) else ord(error.character)
        raise JobError(f"{source}: invalid YAML: unacceptable character {code:#x} at offset {error.position}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark else ""
        problem = " ".join(str(getattr(error, "problem", None) or error).split())
        raise JobError(f"{source}:{where} invalid YAML: {problem}") from None
    finally:
        if loader is not None:
            loader.dispose()
