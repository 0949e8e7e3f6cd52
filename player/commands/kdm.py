"""``cinegpu kdm inspect KDM.xml [--key recipient.pem] [--json]``: a Key Delivery Message's
fields, its signature and certificate chain, and (with the recipient's private key) its
content keys, for diagnosing a screening, as libdcp's ``dcpkdm`` shows them."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("kdm", help="inspect a KDM (SMPTE ST 430-1): its fields, signature, "
                                          "certificate chain and, with the recipient's key, its keys")
    sub = p.add_subparsers(dest="kdm_command", metavar="ACTION", required=True)
    i = sub.add_parser("inspect", help="print a KDM's fields; exit 1 when its signature, chain or "
                                       "validity window does not hold now")
    i.add_argument("kdm", type=Path, help="the KDM (.xml)")
    i.add_argument("--key", type=Path, default=None,
                   help="the recipient's RSA private key (PEM, unencrypted): decrypt and print the "
                        "content keys (they are printed: keep the output to yourself)")
    i.add_argument("--json", action="store_true", help="the same as JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    from cinegpu.media import MediaError
    from cinegpu.media.errors import KdmRefused
    from cinegpu.media.kdm import check_chain, check_signature, decrypt_keys, load_private_key, read_kdm

    kdm = read_kdm(args.kdm)
    now = datetime.now(timezone.utc)
    problems = []
    try:
        signature = check_signature(kdm)
    except KdmRefused as exc:
        signature = None
        problems.append(f"signature: {exc.reason}")
    chain = check_chain(kdm, now)
    problems += [f"chain: {p}" for p in chain.problems]
    if now < kdm.not_before or now > kdm.not_after:
        problems.append(f"validity: the keys are valid from {kdm.not_before.isoformat()} to "
                        f"{kdm.not_after.isoformat()}, not now")
    keys = None
    if args.key is not None:
        try:
            keys = decrypt_keys(kdm, load_private_key(args.key))
        except KdmRefused as exc:
            problems.append(f"keys: {exc.reason}")
        except MediaError:
            raise
    report = {
        "file": str(args.kdm), "message_id": kdm.message_id, "annotation": kdm.annotation,
        "issue_date": kdm.issue_date, "cpl_id": kdm.cpl_id, "content_title": kdm.content_title,
        "not_valid_before": kdm.not_before.isoformat(), "not_valid_after": kdm.not_after.isoformat(),
        "recipient": {"subject": kdm.recipient_subject, "issuer": kdm.recipient_issuer,
                      "serial": kdm.recipient_serial},
        "key_ids": [{"type": t.key_type, "id": t.key_id} for t in kdm.key_ids],
        "forensic_mark_flags": list(kdm.forensic_flags),
        "signature": signature, "chain": list(chain.subjects),
        "problems": problems,
    }
    if keys is not None:
        report["keys"] = [{"type": k.key_type, "id": k.key_id, "key": k.key.hex(),
                           "not_valid_before": k.not_before.isoformat(),
                           "not_valid_after": k.not_after.isoformat()} for k in keys]
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        _print(report)
    return 1 if problems else 0


def _print(r: dict) -> None:
    print(f"{r['file']}")
    for label, key in (("message", "message_id"), ("annotation", "annotation"), ("issued", "issue_date"),
                       ("composition", "cpl_id"), ("title", "content_title"),
                       ("valid from", "not_valid_before"), ("valid to", "not_valid_after")):
        if r[key] is not None:
            print(f"  {label:<12} {r[key]}")
    if r["recipient"]["subject"]:
        print(f"  {'recipient':<12} {r['recipient']['subject']}")
    for k in r["key_ids"]:
        print(f"  {'key id':<12} {k['type']} {k['id']}")
    print(f"  {'signature':<12} {r['signature'] or 'does not hold'}")
    for depth, subject in enumerate(r["chain"]):
        print(f"  {'chain' if depth == 0 else '':<12} {'  ' * depth}{subject}")
    for k in r.get("keys", []):
        print(f"  {'key':<12} {k['type']} {k['id']} {k['key']}")
    for p in r["problems"]:
        print(f"  problem: {p}")
