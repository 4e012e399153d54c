"""The live page: its HTML (`live_page`) and its data (`status`); the topology is drawn by `topology_render`."""
