"""The playback server (``cinegpu serve``): the player as a long-lived service driven over HTTP.

- :mod:`.library`: the compositions under the library folder, by CPL id;
- :mod:`.engine`: the display thread: the player, its command queue and status snapshots;
- :mod:`.app`: the JSON API under ``/api/v1`` (Starlette), with the DCP-o-matic player paths;
- :mod:`.openapi`: the API's OpenAPI 3.1 document;
- :mod:`.access`: the token, Host, Origin and JSON-only checks;
- :mod:`.protocol`: the bounded HTTP connection (head deadline, connection cap, TCP_NODELAY);
- :mod:`.runner`: the process: window, engine, uvicorn on a background thread, SIGTERM;
- :mod:`.client`: start a server process and drive or poll it (tests, the GPU bench).
"""

from .engine import CommandError, Engine
from .library import Entry, Library
from .runner import serve

__all__ = ["CommandError", "Engine", "Entry", "Library", "serve"]
