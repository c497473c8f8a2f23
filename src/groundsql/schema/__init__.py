"""Schemas: the introspected model and its renderings for prompts."""

from groundsql.schema.model import Column, ForeignKey, Schema, Table
from groundsql.schema.render import ddl, m_schema, render_schema

__all__ = ["Column", "ForeignKey", "Schema", "Table", "ddl", "m_schema", "render_schema"]
