"""The OpenAPI 3.1 document of the playback server (served at ``/api/v1/openapi.json``).

Written out by hand so that it says exactly what the handlers in :mod:`.app` accept: the
property-based tests generate their requests from it.
"""

from __future__ import annotations

__all__ = ["openapi"]

ID = {"type": "string", "minLength": 1, "maxLength": 200,
      "description": "a CPL id (urn:uuid: prefix allowed) or a sequence id from /library"}

ERROR = {"type": "object", "required": ["error", "status"],
         "properties": {"error": {"type": "string"}, "status": {"type": "integer"}}}

STATUS = {
    "type": "object",
    "required": ["state", "frame", "timecode", "edit_rate", "decode_fps", "late", "dropped", "backend",
                 "errors", "version", "playing", "position", "dcp_name"],
    "properties": {
        "state": {"enum": ["idle", "loading", "stopped", "starting", "playing", "paused", "ended"]},
        "composition": {"type": ["object", "null"]},
        "playlist": {"type": "array", "items": {"type": "string"}},
        "playlist_index": {"type": ["integer", "null"]},
        "loop": {"type": "boolean"},
        "reel": {"type": ["object", "null"], "description": "index, id and frame within the reel"},
        "frame": {"type": ["integer", "null"], "description": "media frame due now (0-based)"},
        "shown_frame": {"type": ["integer", "null"], "description": "media frame on screen"},
        "frame_count": {"type": ["integer", "null"]},
        "timecode": {"type": ["string", "null"], "description": "hh:mm:ss:ff of frame"},
        "edit_rate": {"type": ["string", "null"], "description": "frames per second, a fraction"},
        "edit_rate_fps": {"type": ["number", "null"]},
        "decode_fps": {"type": "number", "description": "pictures decoded per second, recently"},
        "resolution": {"type": "string",
                       "description": "\"full\", or \"1/2\", \"1/4\" of the size while decoding cannot keep up"},
        "shown": {"type": "integer", "description": "frames of this composition shown (late ones included)"},
        "late": {"type": "integer", "description": "frames of this composition shown late"},
        "dropped": {"type": "integer", "description": "frames of this composition dropped"},
        "frame_errors": {"type": "integer",
                         "description": "frames of this composition that failed to decode (concealed)"},
        "dropped_at": {"type": "string",
                       "description": "timeline positions of this composition dropped (the first 64, as ranges)"},
        "session": {"type": "object", "description": "shown, late, dropped and frame_errors over the playlist "
                                                     "since it was loaded (every composition of it)",
                    "properties": {k: {"type": "integer"} for k in ("shown", "late", "dropped", "frame_errors")}},
        "backend": {"type": "string"}, "interop": {"type": ["string", "null"]},
        "errors": {"type": "array", "items": {"type": "object"}, "description": "recent warnings"},
        "error_count": {"type": "integer"},
        "uptime": {"type": "number", "description": "seconds"},
        "version": {"type": "integer", "description": "bumped by every status change"},
        "playing": {"type": "boolean", "description": "DCP-o-matic player API"},
        "position": {"type": "string", "description": "h:mm:ss (DCP-o-matic player API)"},
        "dcp_name": {"type": "string", "description": "DCP-o-matic player API"},
        "subtitles": {"type": "object", "description": "on: drawn when there are any (the subtitles command); "
                                                       "available: the composition loaded has some read"},
        "audio": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/AudioStatus"}],
                  "description": "the sound played; null when nothing with sound is loaded (or --audio off)"},
    },
}

AUDIO_STATUS = {
    "type": "object",
    "required": ["sink", "channels", "sink_channels", "rate", "volume", "mute", "routing", "routing_note",
                 "offset_ms", "peaks_dbfs", "channel_labels"],
    "properties": {
        "sink": {"enum": ["null", "sounddevice"], "description": "where the sound goes"},
        "channels": {"type": "integer", "description": "the composition's sound channels"},
        "sink_channels": {"type": "integer", "description": "the sink's channels"},
        "rate": {"type": "integer", "description": "samples per second"},
        "volume": {"type": "number", "minimum": 0, "maximum": 2, "description": "linear gain"},
        "mute": {"type": "boolean"},
        "routing": {"enum": ["default", "custom"],
                    "description": "default: the downmix (ITU-R BS.775 to stereo), custom: set by POST /audio"},
        "routing_note": {"type": ["string", "null"],
                         "description": "why a custom routing went back to the default (a load with other channels)"},
        "offset_ms": {"type": ["number", "null"],
                      "description": "sound against picture over the last presented frames (largest, signed; "
                                     "positive: sound ahead), ms; null before a frame is presented with sound"},
        "peaks_dbfs": {"type": "array", "items": {"type": ["number", "null"]},
                       "description": "the meters: each of the composition's channels' peak over the last 0.1 s "
                                      "of sound fed to the sink (before downmix, volume and mute), dBFS; null: "
                                      "silence (-inf), also while nothing plays"},
        "channel_labels": {"type": "array", "items": {"type": "string"},
                           "description": "the channels' names (ST 377-4 MCA symbols, else the ST 429-2 order; "
                                          "empty where unknown), in the order of peaks_dbfs"},
    },
}

KDM_INFO = {
    "type": "object",
    "required": ["message_id", "cpl_id", "content_title", "not_before", "not_after", "keys"],
    "description": "a KDM's public fields (ST 430-1); never a key",
    "properties": {
        "message_id": {"type": "string"}, "cpl_id": {"type": "string", "description": "the composition's id"},
        "content_title": {"type": ["string", "null"]}, "annotation": {"type": ["string", "null"]},
        "not_before": {"type": "string", "description": "start of the validity window (ISO 8601)"},
        "not_after": {"type": "string", "description": "end of the validity window (ISO 8601)"},
        "recipient": {"type": ["string", "null"], "description": "the recipient certificate's subject"},
        "keys": {"type": "array", "items": {"type": "object", "required": ["type", "id"],
                                            "properties": {"type": {"type": "string"},
                                                           "id": {"type": "string"}}}},
    },
}

KDM_UPLOAD = {"type": "object", "required": ["kdm"], "additionalProperties": False,
              "properties": {"kdm": {"type": "string", "minLength": 1, "maxLength": 1 << 20,
                                     "description": "the KDM's XML document (ST 430-3)"}}}

GAIN = {"type": "number", "minimum": -2, "maximum": 2}
AUDIO = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "volume": {"type": "number", "minimum": 0, "maximum": 2, "description": "linear gain (1: as recorded)"},
        "mute": {"type": "boolean"},
        "routing": {"type": ["array", "null"], "minItems": 1, "maxItems": 64,
                    "items": {"type": "array", "items": GAIN, "minItems": 1, "maxItems": 64},
                    "description": "gains from each source channel (rows) to each sink channel (columns), all "
                                   "rows of one length; the shape must be the status's channels x "
                                   "sink_channels; null: the default downmix"},
    },
}

LOAD = {
    "oneOf": [
        {"type": "object", "required": ["cpl"], "additionalProperties": False,
         "properties": {"cpl": ID, "loop": {"type": "boolean"}, "play": {"type": "boolean"}}},
        {"type": "object", "required": ["playlist"], "additionalProperties": False,
         "properties": {"playlist": {"type": "array", "items": ID, "minItems": 1, "maxItems": 100},
                        "loop": {"type": "boolean"}, "play": {"type": "boolean"}}},
    ]
}

SEEK = {
    "oneOf": [
        {"type": "object", "required": ["frame"], "additionalProperties": False,
         "properties": {"frame": {"type": "integer", "minimum": 0}}},
        {"type": "object", "required": ["timecode"], "additionalProperties": False,
         "properties": {"timecode": {"type": "string", "pattern": r"^\d{1,3}:[0-5]\d:[0-5]\d[:;]\d{1,3}$"}}},
    ]
}

STEP = {"type": "object", "additionalProperties": False,
        "properties": {"frames": {"type": "integer", "minimum": -1000000, "maximum": 1000000,
                                  "description": "frames to move (negative: back); default 1"}}}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict:
    names = {400: "malformed request", 401: "missing or wrong bearer token", 404: "unknown id",
             409: "not possible in this state", 413: "body too large", 415: "body is not JSON",
             422: "invalid values (a KDM: not one, or one that does not hold, and why)", 503: "shutting down"}
    return {str(c): _json({"$ref": "#/components/schemas/Error"}, names[c]) for c in codes}


def _command(summary: str, body: dict | None = None, *, compat: bool = False, codes=(409, 422)) -> dict:
    op: dict = {"summary": summary,
                "responses": {"200": _json({"$ref": "#/components/schemas/Status"}, "status after the command"),
                              **_errors(400, 413, 415, *codes)}}
    if compat:
        op["description"] = ("DCP-o-matic player API: a form post or a client that accepts text/html "
                             "gets 303 See Other to / instead of the JSON status.")
        op["responses"]["303"] = {"description": "see /", "headers": {"Location": {"schema": {"type": "string"}}}}
    if body is not None:
        op["requestBody"] = {"required": False, "content": {"application/json": {"schema": body}}}
    return {"post": op}


def openapi(*, token: bool) -> dict:
    """The document; ``token``: the server requires ``Authorization: Bearer``."""
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "cinegpu playback server", "version": "1",
                 "description": "Control a cinegpu player (cinegpu serve) over HTTP."},
        "paths": {
            "/api/v1/library": {"get": {
                "summary": "packages and compositions under the library folder (re-scanned for every request)",
                "responses": {"200": _json({"type": "object", "required": ["compositions", "packages"]},
                                           "the scan")}}},
            "/api/v1/load": {"post": {
                "summary": "load a composition or a playlist; answers when it is ready (stopped at frame 0)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": LOAD}}},
                "responses": {"200": _json({"$ref": "#/components/schemas/Status"}, "loaded"),
                              **_errors(400, 404, 409, 413, 415, 422)}}},
            "/api/v1/play": _command("play from the current frame (after a short preroll)", compat=True),
            "/api/v1/pause": _command("hold the current frame"),
            "/api/v1/stop": _command("stop and go back to the first frame", compat=True),
            "/api/v1/step": _command("pause and move by some frames", STEP),
            "/api/v1/seek": {"post": {
                "summary": "go to a frame or a timecode, keeping play or pause",
                "requestBody": {"required": True, "content": {"application/json": {"schema": SEEK}}},
                "responses": {"200": _json({"$ref": "#/components/schemas/Status"}, "status after the seek"),
                              **_errors(400, 409, 413, 415, 422)}}},
            "/api/v1/audio": {"post": {
                "summary": "volume, mute and channel routing of the sound playing (any of them; kept across "
                           "loads, a routing that does not fit a later sound goes back to the default)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": AUDIO}}},
                "responses": {"200": _json({"$ref": "#/components/schemas/Status"}, "status after the change"),
                              **_errors(400, 409, 413, 415, 422)}}},
            "/api/v1/loop": {"post": {
                "summary": "loop or not from now on (a composition wraps at its end, a playlist starts again)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["loop"], "additionalProperties": False,
                    "properties": {"loop": {"type": "boolean"}}}}}},
                "responses": {"200": _json({"$ref": "#/components/schemas/Status"}, "status after the change"),
                              **_errors(400, 413, 415, 422)}}},
            "/api/v1/subtitles": {"post": {
                "summary": "draw the subtitles and captions over the picture or not (from now on, and for later "
                           "loads; on after --subtitles off: later loads read them)",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["on"], "additionalProperties": False,
                    "properties": {"on": {"type": "boolean"}}}}}},
                "responses": {"200": _json({"$ref": "#/components/schemas/Status"}, "status after the change"),
                              **_errors(400, 413, 415, 422)}}},
            "/api/v1/kdms": {
                "get": {"summary": "the KDMs the server holds (public fields only)",
                        "responses": {"200": _json({"type": "object", "required": ["kdms"], "properties": {
                            "kdms": {"type": "array", "items": {"$ref": "#/components/schemas/KdmInfo"}}}},
                            "the KDMs")}},
                "post": {
                    "summary": "add a KDM: its signature and signer chain checked, its keys opened with the "
                               "private key the server was started with (--key); encrypted compositions it "
                               "names then load within its window",
                    "requestBody": {"required": True, "content": {"application/json": {"schema": KDM_UPLOAD}}},
                    "responses": {"201": _json({"$ref": "#/components/schemas/KdmInfo"}, "the KDM added"),
                                  **_errors(400, 409, 413, 415, 422)}}},
            "/api/v1/status": {"get": {"summary": "the player's status",
                                       "responses": {"200": _json({"$ref": "#/components/schemas/Status"},
                                                                  "status")}}},
            "/api/v1/events": {"get": {
                "summary": "server-sent events: one 'status' event per status change",
                "parameters": [{"name": "max_events", "in": "query", "required": False,
                                "schema": {"type": "integer", "minimum": 1, "maximum": 100000}},
                               {"name": "max_seconds", "in": "query", "required": False,
                                "schema": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400}}],
                "responses": {"200": {"description": "event stream",
                                      "content": {"text/event-stream": {"schema": {
                                          "type": "object", "description": "one event; data is a Status as JSON",
                                          "properties": {"event": {"const": "status"}, "id": {"type": "string"},
                                                         "data": {"type": "string"}}}}}},
                              **_errors(422)}}},
            "/api/v1/preview": {"get": {
                "summary": "the picture on screen, a small JPEG (at most 480 pixels wide, or ?width=); "
                           "re-encoded at most every 0.1 s, from a copy the display keeps of each frame",
                "parameters": [{"name": "width", "in": "query", "required": False,
                                "schema": {"type": "integer", "minimum": 16, "maximum": 1920}}],
                "responses": {"200": {"description": "the picture (ETag, X-Preview-Serial, "
                                                     "X-Preview-Source-Size WxH, X-Preview-Copy-Cost headers)",
                                      "content": {"image/jpeg": {"schema": {"type": "string",
                                                                            "format": "binary"}}}},
                              "204": {"description": "no picture on screen (nothing loaded, or not shown yet)"},
                              "304": {"description": "the picture of If-None-Match is still the one on screen"},
                              **_errors(422)}}},
            "/api/v1/openapi.json": {"get": {"summary": "this document",
                                             "responses": {"200": _json({"type": "object"}, "OpenAPI 3.1")}}},
        },
        "components": {"schemas": {"Error": ERROR, "Status": STATUS, "AudioStatus": AUDIO_STATUS,
                                   "KdmInfo": KDM_INFO}},
    }
    if token:
        doc["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        doc["security"] = [{"bearer": []}]
        for item in doc["paths"].values():
            for op in item.values():
                op["responses"].update(_errors(401))
    return doc
