"""Tile sizes shared by the example kernels."""

ROW_TILE = 8


def row_blocks(rows: int) -> int:
    """How many ROW_TILE-row blocks cover `rows` rows."""
    return (rows + ROW_TILE - 1) // ROW_TILE
