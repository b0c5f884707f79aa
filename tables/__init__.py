"""Where a table lives: location, listing, publish, append, restore, CSV, object stores."""
