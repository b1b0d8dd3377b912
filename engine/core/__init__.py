"""What every layer uses: errors, the run config, JSON that stays JSON, the device, processes."""
