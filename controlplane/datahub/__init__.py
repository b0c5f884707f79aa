"""The DataHub port and its adapters. Only this package talks to DataHub."""
