"""Pure analysis over records: no clocks, no devices, no torch.cuda (see ARCHITECTURE.md)."""
