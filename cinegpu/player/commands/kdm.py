"""``cinegpu kdm``: Key Delivery Messages (SMPTE ST 430-1).

- ``kdm inspect KDM.xml [--key recipient.pem] [--json]``: a KDM's fields, its signature and
  certificate chain, and (with the recipient's private key) its content keys, for diagnosing a
  screening, as libdcp's ``dcpkdm`` shows them; exit 1 when something does not hold now;
- ``kdm make --cpl CPL.xml --keys KEYS --recipient CERT.pem --signer-key K.pem --signer-chain
  CHAIN.pem --not-before T --not-after T -o KDM.xml``: a signed KDM giving the keys of a
  composition's encrypted assets (from the key file of :mod:`cinegpu.media.security.content_keys`) to
  one recipient (:func:`cinegpu.media.security.kdm_write.make_kdm`), written whole or not at all;
  ``--screens SCREENS.csv -o DIR [--zip]`` instead of ``--recipient``: one KDM per screen of the
  CSV (:mod:`cinegpu.media.security.screens`: its columns, DCP-o-matic's file names), all made
  and checked before the folder is written, whole or not at all; ``--dkdm DKDM.xml --dkdm-key
  KEY.pem`` instead of ``--keys``: the keys out of a DKDM (:mod:`cinegpu.media.security.dkdm`),
  the composition its, the window inside its; ``--formulation`` one of DCP-o-matic's
  (:data:`cinegpu.media.security.kdm_write.FORMULATIONS`: what the DeviceList lists);
  ``--utc-offset +01:00`` writes the window in the cinema's offset (with ``--screens``, for the
  screens whose CSV ``utc_offset`` cell is empty): the same instants, as local times;
- ``kdm chain -o DIR``: a new ST 430-2 certificate chain and its leaf's private key, to sign
  KDMs with (or to stand for a recipient in tests).

Every refusal is one line on stderr with exit code 2, as for any other mistake."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cinegpu.media import MediaError
from cinegpu.media.errors import KdmRefused
from cinegpu.media.files import replace_atomically
from cinegpu.media.package.read import read_cpl
from cinegpu.media.security.certificates import dn_string, make_chain, order_chain, read_certificates, write_chain
from cinegpu.media.security.content_keys import read_key_file
from cinegpu.media.security.dkdm import check_inside, open_dkdm
from cinegpu.media.security.kdm import check_chain, check_signature, decrypt_keys, load_private_key, read_kdm
from cinegpu.media.security.kdm_write import FORMULATIONS, composition_keys, make_kdm, parse_time
from cinegpu.media.security.screens import parse_utc_offset, read_screens, write_kdm_folder

from .args import UsageError, one_line_text


def register(subparsers) -> None:
    p = subparsers.add_parser("kdm", help="KDMs (SMPTE ST 430-1): inspect one (fields, signature, chain, "
                                          "keys), make one for a recipient, make a signing chain")
    sub = p.add_subparsers(dest="kdm_command", metavar="ACTION", required=True, help="what to do with KDMs")
    i = sub.add_parser("inspect", help="print a KDM's fields; exit 1 when its signature, chain or "
                                       "validity window does not hold now")
    i.add_argument("kdm", type=Path, help="the KDM (.xml)")
    i.add_argument("--key", type=Path, default=None,
                   help="the recipient's RSA private key (PEM, unencrypted): decrypt and print the "
                        "content keys (they are printed: keep the output to yourself)")
    i.add_argument("--json", action="store_true", help="the same as JSON")
    i.set_defaults(run=run)
    _register_make(sub)
    _register_chain(sub)


def _register_make(sub) -> None:
    m = sub.add_parser("make", help="make signed KDMs giving a composition's content keys to one recipient "
                                    "or to every screen of a CSV",
                       description="Make SMPTE KDMs (ST 430-1 in an ST 430-3 message) for every encrypted "
                                   "asset of a CPL, signed with a certificate chain (see 'kdm chain'): for one "
                                   "--recipient into the file -o, or for each screen of --screens into the new "
                                   "folder -o. The keys come from the content key file (--keys) or from a DKDM "
                                   "(--dkdm with --dkdm-key): a KDM to your own certificate, made with "
                                   "'kdm make --recipient MY_CERT.pem'. "
                                   "Times: ISO 8601 (2026-12-01T20:00:00+01:00; without an offset a time "
                                   "is UTC; a date alone is its midnight UTC), 'now', or now plus or minus "
                                   "an amount: +7d, +12h, --not-before=-30m (units s, m, h, d, w; a negative amount after '=').")
    m.add_argument("--cpl", type=Path, default=None,
                   help="the composition playlist (CPL .xml); optional with --dkdm (then the DKDM's "
                        "composition, title and keys)")
    source = m.add_mutually_exclusive_group(required=True)
    source.add_argument("--keys", type=Path, default=None,
                        help="the content key file (mode 600; one 'TYPE urn:uuid:KEYID HEXKEY' a line, as "
                             "cinegpu.media.security.content_keys writes it)")
    source.add_argument("--dkdm", type=Path, default=None,
                        help="a DKDM (a KDM to your own certificate) to take the content keys from instead "
                             "of --keys; the new KDMs are for its composition and their window must lie "
                             "inside its window")
    m.add_argument("--dkdm-key", type=Path, default=None, metavar="KEY",
                   help="the DKDM recipient's RSA private key (PEM, unencrypted, mode 600): opens --dkdm")
    who = m.add_mutually_exclusive_group(required=True)
    who.add_argument("--recipient", type=Path, default=None,
                     help="the recipient's certificate (PEM; a chain in it: its leaf), e.g. a projector's")
    who.add_argument("--screens", type=Path, default=None, metavar="SCREENS.csv",
                     help="a CSV of screens, one KDM each: a header row naming the columns cinema, screen, "
                          "certificate (the screen's leaf certificate: a PEM file's path relative to the "
                          "CSV's folder, or the PEM inline in a quoted cell) and optionally "
                          "trusted_devices (';'-separated certificate thumbprints, base64 of 20 bytes, or "
                          "PEM paths); KDMs named as DCP-o-matic names them, KDM_<title>_<cinema>_<screen>.xml")
    m.add_argument("--signer-key", type=Path, required=True,
                   help="the signer's RSA private key (PEM, unencrypted): the chain's leaf's")
    m.add_argument("--signer-chain", type=Path, required=True,
                   help="the signer's certificates: leaf, intermediates and root (PEM, in any order)")
    m.add_argument("--not-before", required=True, metavar="TIME", help="the keys' first valid time")
    m.add_argument("--not-after", required=True, metavar="TIME", help="the keys' last valid time")
    m.add_argument("--utc-offset", default=None, metavar="OFFSET",
                   help="write the window in this UTC offset, the cinema's (+01:00, -05:30, +0100, +1; "
                        "the same instants as local times); with --screens, for the screens whose "
                        "utc_offset cell is empty")
    m.add_argument("-o", "--output", type=Path, required=True,
                   help="the KDM to write (.xml); with --screens a new (or empty) folder for the KDMs")
    m.add_argument("--zip", action="store_true",
                   help="with --screens: one ZIP per cinema (KDM_<title>_<cinema>.zip) holding its "
                        "screens' KDMs, instead of the KDMs themselves")
    m.add_argument("--formulation", choices=tuple(FORMULATIONS), default=None,
                   help="the KDM's formulation, as DCP-o-matic offers them (default modified-transitional-1; "
                        "multiple-modified-transitional-1 when trusted devices are given): the DeviceList is "
                        "the 'assume trust' thumbprint (modified-transitional-1, dci-any) or the trusted "
                        "devices' (multiple-modified-transitional-1, dci-specific); the dci ones add a "
                        "ContentAuthenticator")
    m.add_argument("--annotation", type=one_line_text, default=None,
                   help="the KDM's AnnotationText (default: the CPL's title)")
    m.add_argument("--trusted-device", type=Path, action="append", default=[], metavar="CERT",
                   help="a trusted device's certificate (PEM) for the DeviceList; repeatable; with "
                        "--recipient only (a screen's are in the CSV)")
    m.add_argument("--disable-forensic-marking", action="append", default=[], choices=("picture", "audio"),
                   help="ask the server not to forensically mark the picture or the audio")
    m.add_argument("--force", action="store_true", help="replace an existing output file (not a folder)")
    m.set_defaults(run=run_make)


def _register_chain(sub) -> None:
    c = sub.add_parser("chain", help="make an ST 430-2 certificate chain and its leaf key to sign KDMs with",
                       description="Write ca.self-signed.pem, intermediate.signed.pem, leaf.signed.pem, "
                                   "chain.pem (all three, leaf first: what 'kdm make --signer-chain' takes) "
                                   "and leaf.key (the leaf's private key, mode 600) into DIR. Nothing is "
                                   "overwritten; the CA keys are not kept.")
    c.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="the folder to write into")
    c.add_argument("--organisation", type=one_line_text, default="cinegpu.example",
                   help="the certificates' O and OU (default: cinegpu.example)")
    c.add_argument("--common-name", type=one_line_text, default="cinegpu",
                   help="the name in each CN: .NAME.ROOT, .NAME.INTERMEDIATE, ROLE.NAME (default: cinegpu)")
    c.add_argument("--role", default="CS", type=one_line_text,
                   help="the leaf's role prefix (default CS, content signer; SM for a recipient)")
    c.add_argument("--days", type=int, default=3640, help="the leaf's validity in days, from a day before now (default: 3640, so that the root, two days longer, stays within the ten years ClairMeta allows)")
    c.set_defaults(run=run_chain)


def run_make(args) -> int:
    now = datetime.now(timezone.utc)
    try:
        not_before, not_after = parse_time(args.not_before, now), parse_time(args.not_after, now)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _check_make_args(args)
    offset = _utc_offset(args.utc_offset)
    title, cpl_id, keys = _content(args, not_before, not_after)
    chain = order_chain(read_certificates(args.signer_chain), args.signer_chain)
    common = dict(cpl_id=cpl_id, content_title=title, keys=keys, signer_key=load_private_key(args.signer_key),
                  signer_chain=chain, not_before=not_before, not_after=not_after, annotation=args.annotation,
                  forensic_flags=args.disable_forensic_marking, formulation=args.formulation)
    if args.screens is not None:
        return _make_for_screens(args, common, offset)
    if offset is not None:
        not_before, not_after = (t.astimezone(timezone(offset)) for t in (not_before, not_after))
        common.update(not_before=not_before, not_after=not_after)
    recipient = order_chain(read_certificates(args.recipient), args.recipient)[0]
    trusted = [order_chain(read_certificates(p), p)[0] for p in args.trusted_device]
    data = make_kdm(recipient=recipient, trusted_devices=trusted, path=args.output, **common)
    replace_atomically(args.output, data, "KDM", overwrite=args.force)
    print(f"{args.output}: KDM for {title or cpl_id} ({len(keys)} keys) to {dn_string(recipient.subject)}, "
          f"valid {not_before.isoformat()} to {not_after.isoformat()}")
    return 0


def _check_make_args(args) -> None:
    """The options that go together (argparse's groups say which exclude each other)."""
    if args.dkdm is not None and args.dkdm_key is None:
        raise UsageError("--dkdm needs --dkdm-key, the private key of the DKDM's recipient")
    if args.dkdm is None and args.dkdm_key is not None:
        raise UsageError("--dkdm-key opens a DKDM: give --dkdm too")
    if args.dkdm is None and args.cpl is None:
        raise UsageError("--cpl is needed with --keys (a DKDM names its composition; a key file may not)")
    if args.screens is not None and args.trusted_device:
        raise UsageError("with --screens, give each screen's trusted devices in the CSV's trusted_devices "
                         "column, not --trusted-device")
    if args.screens is None and args.zip:
        raise UsageError("--zip packs the KDMs of --screens, one ZIP per cinema")
    if args.screens is None and not args.force and (args.output.exists() or args.output.is_symlink()):
        raise UsageError(f"{args.output} exists already (--force replaces it)")
    out = args.output
    if args.screens is not None and (out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir())))):
        raise UsageError(f"{out} exists already: name a new folder (or an empty one) for the KDMs")
    if args.formulation in ("modified-transitional-1", "dci-any") and args.trusted_device:
        raise UsageError(f"a {args.formulation} KDM lists no trusted device: ask for "
                         f"multiple-modified-transitional-1 or dci-specific")


def _utc_offset(text: str | None) -> timedelta | None:
    """``--utc-offset`` (None when not given)."""
    if text is None:
        return None
    try:
        return parse_utc_offset(text)
    except ValueError as exc:
        raise UsageError(f"--utc-offset: {exc}") from None


def _content(args, not_before, not_after) -> tuple:
    """The composition's title and id, and the keys to give: from the key file and the CPL, or
    from the DKDM (its composition; the CPL, when given, must be it), the window inside the DKDM's."""
    cpl = read_cpl(args.cpl) if args.cpl is not None else None
    if args.dkdm is None:
        return cpl.title, cpl.id, composition_keys(cpl, read_key_file(args.keys), args.keys)
    dkdm = open_dkdm(args.dkdm, load_private_key(args.dkdm_key))
    check_inside(dkdm, not_before, not_after)
    if cpl is None:
        return dkdm.content_title, dkdm.cpl_id, list(dkdm.keys)
    if cpl.id != dkdm.cpl_id:
        raise KdmRefused(args.dkdm, f"the DKDM is for composition {dkdm.cpl_id}, not {cpl.id} ({args.cpl})")
    return cpl.title, cpl.id, composition_keys(cpl, dkdm.key_file(), args.dkdm)


def _make_for_screens(args, common: dict, offset: timedelta | None) -> int:
    """One KDM per screen of the CSV, all made (each read back and checked by ``make_kdm``)
    before any is written, then written whole into the folder or not at all; each window in
    its cinema's UTC offset (the CSV's, else ``offset``, else as given)."""
    screens = read_screens(args.screens)
    made = []
    for screen in screens:
        zone = screen.utc_offset if screen.utc_offset is not None else offset
        local = {k: common[k] if zone is None else common[k].astimezone(timezone(zone))
                 for k in ("not_before", "not_after")}
        try:
            data = make_kdm(recipient=screen.certificate, trusted_devices=screen.trusted_devices,
                            path=args.screens, **{**common, **local})
        except MediaError as exc:
            raise type(exc)(args.screens, f"{screen.where()}: {exc.reason}") from None
        made.append((screen, data))
    title = common["content_title"] or ""
    written = write_kdm_folder(args.output, made, title, zip_by_cinema=args.zip)
    for path in written:
        print(path)
    print(f"{args.output}: {len(made)} KDMs for {title or common['cpl_id']} ({len(common['keys'])} keys) to "
          f"{len(screens)} screens of {len({s.cinema for s in screens})} cinemas"
          f"{' in ' + str(len(written)) + ' ZIPs' if args.zip else ''}, valid "
          f"{common['not_before'].isoformat()} to {common['not_after'].isoformat()}")
    return 0


def run_chain(args) -> int:
    if args.days < 1:
        raise UsageError(f"--days must be at least 1, got {args.days}")
    chain = make_chain(args.organisation, args.common_name, role=args.role, days=args.days)
    paths = write_chain(chain, args.output)
    print(f"{args.output}: chain for {dn_string(chain.leaf.subject)}, valid to "
          f"{chain.leaf.not_valid_after_utc.isoformat()}")
    for what, path in paths.items():
        print(f"  {what:<13} {path}")
    return 0


def run(args) -> int:
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
        "device_list": list(kdm.device_thumbprints), "content_authenticator": kdm.content_authenticator,
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
    for t in r["device_list"]:
        print(f"  {'device':<12} {t}")
    if r["content_authenticator"]:
        print(f"  {'authenticator':<12} {r['content_authenticator']}")
    print(f"  {'signature':<12} {r['signature'] or 'does not hold'}")
    for depth, subject in enumerate(r["chain"]):
        print(f"  {'chain' if depth == 0 else '':<12} {'  ' * depth}{subject}")
    for k in r.get("keys", []):
        print(f"  {'key':<12} {k['type']} {k['id']} {k['key']}")
    for p in r["problems"]:
        print(f"  problem: {p}")
