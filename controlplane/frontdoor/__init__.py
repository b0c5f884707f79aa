"""The front door: services, views, render, access, doctor."""
