"""The ``.. kafkacore-settings::`` directive: the producer's settings table, made from the data.

The table is built from :data:`kafkacore.config.SETTINGS` each time the docs build, so the docs
cannot drift from the code and nobody pastes a table.
"""

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


class SettingsTable(SphinxDirective):
    has_content = False

    def run(self):
        from kafkacore.config import settings_rst_table

        lines = StringList(settings_rst_table().splitlines(), source="kafkacore.config.SETTINGS")
        node = nodes.container()
        self.state.nested_parse(lines, self.content_offset, node)
        return node.children


def setup(app):
    app.add_directive("kafkacore-settings", SettingsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
