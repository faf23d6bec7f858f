"""Outlines of source files in other languages, parsed with tree-sitter.

The grammars are the tree-sitter project's own prebuilt wheels (one package
per language), loaded on first use; a missing grammar means the generic outline.
"""

import importlib
from functools import cache

import tree_sitter

#: language -> (module, function returning the grammar)
GRAMMARS = {
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "java": ("tree_sitter_java", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "bash": ("tree_sitter_bash", "language"),
}
SUFFIXES = {
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp",
    ".hh": "cpp", ".java": "java", ".rb": "ruby", ".sh": "bash", ".bash": "bash",
}
#: Node types that define something worth listing, across these grammars.
DEFINITIONS = {
    "function_declaration", "generator_function_declaration", "class_declaration",
    "method_definition", "interface_declaration", "type_alias_declaration", "enum_declaration",
    "abstract_class_declaration", "function_signature", "lexical_declaration",
    "method_declaration", "type_declaration", "function_item", "struct_item", "enum_item",
    "trait_item", "impl_item", "mod_item", "macro_definition", "function_definition",
    "struct_specifier", "class_specifier", "namespace_definition", "constructor_declaration",
    "record_declaration", "method", "singleton_method", "class", "module",
}
#: Definitions whose children are listed too (class bodies, impl blocks, ...).
CONTAINERS = {
    "class_declaration", "abstract_class_declaration", "interface_declaration", "impl_item",
    "trait_item", "mod_item", "class_specifier", "namespace_definition", "class", "module",
    "struct_specifier", "enum_declaration", "export_statement", "program", "source_file",
    "translation_unit", "declaration_list", "class_body", "body_statement", "interface_body",
    "field_declaration_list", "enum_body", "statement_block",
}


def language_for(suffix: str) -> str | None:
    return SUFFIXES.get(suffix)


@cache
def _parser(language: str) -> tree_sitter.Parser | None:
    module_name, function = GRAMMARS[language]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return tree_sitter.Parser(tree_sitter.Language(getattr(module, function)()))


def _name(node: tree_sitter.Node) -> str:
    target = node.child_by_field_name("name")
    if target is None and node.type == "lexical_declaration":
        declarator = next((c for c in node.named_children if c.type == "variable_declarator"), None)
        target = declarator.child_by_field_name("name") if declarator else None
    if target is None and node.type == "impl_item":
        target = node.child_by_field_name("type")
    if target is None:
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.child_by_field_name("declarator") is not None:
            declarator = declarator.child_by_field_name("declarator")
        target = declarator
    return target.text.decode(errors="replace") if target is not None and target.text else ""


def _definitions(node: tree_sitter.Node, depth: int = 0, prefix: str = ""):
    """(depth, qualified name, node) of every definition, outermost first."""
    for child in node.named_children:
        if child.type in DEFINITIONS:
            name = _name(child)
            if child.type == "lexical_declaration" and depth > 0:
                continue  # local variables
            qualified = f"{prefix}{name}" if name else prefix.rstrip(".")
            yield depth, qualified, child
            if child.type in CONTAINERS or child.child_by_field_name("body") is not None:
                body = child.child_by_field_name("body") or child
                if child.type not in ("function_declaration", "function_item", "function_definition",
                                      "method_definition", "method_declaration", "method"):
                    yield from _definitions(body, depth + 1, f"{qualified}." if name else prefix)
        elif child.type in CONTAINERS:
            yield from _definitions(child, depth, prefix)


def outline(language: str, text: str) -> str:
    """Definitions with line numbers and their first line (the signature); "" without a grammar."""
    parser = _parser(language)
    if parser is None:
        return ""
    tree = parser.parse(text.encode())
    lines = text.splitlines()
    out = []
    for depth, _, node in _definitions(tree.root_node):
        start, end = node.start_point[0], node.end_point[0]
        head = lines[start].strip() if start < len(lines) else ""
        out.append(f"{'  ' * depth}L{start + 1}-{end + 1} {head[:140]}")
    return "\n".join(out)


def element(language: str, text: str, name: str) -> str:
    """The source of the definition called `name` (or Outer.inner), comments above included."""
    parser = _parser(language)
    if parser is None:
        return ""
    tree = parser.parse(text.encode())
    for _, qualified, node in _definitions(tree.root_node):
        if qualified == name or qualified.endswith(f".{name}") and "." not in name:
            first = node
            while first.prev_named_sibling is not None and first.prev_named_sibling.type in (
                    "comment", "decorator", "attribute_item", "line_comment", "block_comment") and (
                    first.prev_named_sibling.end_point[0] >= first.start_point[0] - 1):
                first = first.prev_named_sibling
            data = text.encode()
            # from the start of its first line (indentation kept), unless code precedes it there
            start = data.rfind(b"\n", 0, first.start_byte) + 1
            if data[start:first.start_byte].strip():
                start = first.start_byte
            return data[start:node.end_byte].decode(errors="replace")
    return ""
