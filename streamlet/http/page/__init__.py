"""The live page: its HTML (`live_page`), its data (`status`), and the topology drawing (`topology_svg`)."""
