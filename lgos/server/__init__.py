"""Hosting: settings, resources, the application `lgos serve` runs, logging."""

from lgos.server.app import RegistryFactory, create_app
from lgos.server.resources import ServerResources
from lgos.server.settings import ServerSettings

__all__ = ["RegistryFactory", "ServerResources", "ServerSettings", "create_app"]
