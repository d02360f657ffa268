"""docs/pypto.md §2: SIM on a CPU host computes nothing; every tensor comes back byte-identical."""
import gc

from common import inputs, scale_add, scratch, silenced

scratch("no-data-path")
import torch  # noqa: E402

kernel = scale_add()
x, y = inputs((64, 128))
x0, y0 = x.clone(), y.clone()
golden = x * 2 + y

zeros = torch.zeros_like(x)
with silenced():
    kernel(x, y, zeros)
print("output made with zeros:     still all zero:", bool((zeros == 0).all()),
      "| max |out - golden|:", float((zeros - golden).abs().max()))

sentinel = torch.full_like(x, 12345.0)
with silenced():
    kernel(x, y, sentinel)
print("output filled with 12345:   unchanged:", bool((sentinel == 12345.0).all()))
print("inputs after the calls:     byte-identical:", torch.equal(x, x0) and torch.equal(y, y0))

# torch.empty hands back whatever the allocator held: here a freed tensor of huge values.
junk = torch.full((64, 128), 3e30)
del junk
gc.collect()
empty = torch.empty(64, 128)
with silenced():
    kernel(x, y, empty)
finite = torch.isfinite(empty)
print("output made with torch.empty: absmax", float(empty[finite].abs().max()) if finite.any() else "n/a",
      "| non-finite:", int((~finite).sum()), "| equals golden:", torch.allclose(empty, golden))
