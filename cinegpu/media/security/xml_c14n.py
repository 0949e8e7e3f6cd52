"""Canonical XML 1.0 (W3C Recommendation, 15 March 2001) of a document subset: what an XML
signature (W3C XML-DSig, as SMPTE ST 430-3 clause 5.3 uses it) digests for a same-document
reference and signs for ``SignedInfo``.

One canonicaliser for the KDM reader (:mod:`.kdm`, checking) and writer (:mod:`.kdm_write`,
signing) and for signed CPLs and PKLs (:mod:`.package_signature`), so that what cinegpu signs
is byte for byte what it checks.
"""

from __future__ import annotations

__all__ = ["canonical_xml"]


def canonical_xml(el, comments: bool = False, exclude=None) -> bytes:
    """Inclusive Canonical XML 1.0 (W3C, 2001; ``comments``: with comments) of the document
    subset that is ``el`` and its descendants, as XML-DSig digests a same-document reference
    and signs ``SignedInfo``: the apex carries every namespace in scope, used or not, and a
    descendant only those that differ from its output parent's.  Written out here because
    libxml2's subtree output (lxml's ``method="c14n"`` on an element) adds ``xmlns=""`` to
    prefixed descendants of an element in a default namespace; checked against xmlsec on an
    easyDCP KDM in the tests, and against lxml's own output where the two agree.  ``exclude``:
    a descendant element left out with its descendants, its tail kept, as XML-DSig's
    enveloped-signature transform removes the ``Signature`` (clause 6.6.4) from a reference to
    the whole document (``URI=""``, whose node-set has no comments)."""
    out: list[str] = []
    _c14n_element(el, {}, comments, out, exclude)
    return "".join(out).encode("utf-8")


def _c14n_element(el, rendered: dict, comments: bool, out: list, exclude=None) -> None:
    """Section 2.3 of C14N 1.0: namespace declarations that differ from those the output
    parent ``rendered`` (default first, then by prefix), attributes by namespace URI then
    local name, start and end tags always, text and attribute values escaped."""
    scope = {("" if p is None else p): uri for p, uri in el.nsmap.items()}
    mine = {p: uri for p, uri in scope.items() if rendered.get(p) != uri}
    if "" not in scope and rendered.get("", ""):       # the default namespace undeclared here
        mine[""] = ""
    name = _qname(el.tag, el.prefix)
    parts = [f"<{name}"]
    for p in sorted(mine):
        parts.append(f' xmlns="{_attr_escape(mine[p])}"' if p == "" else f' xmlns:{p}="{_attr_escape(mine[p])}"')
    by_uri = {uri: p for p, uri in scope.items() if p}
    attrs = []
    for key, value in el.attrib.items():
        uri, local = (key[1:].split("}", 1) if key.startswith("{") else ("", key))
        qname = local if not uri else ("xml:" + local if uri == "http://www.w3.org/XML/1998/namespace"
                                        else f"{by_uri.get(uri, '')}:{local}")
        attrs.append((uri, local, qname, value))
    for _, _, qname, value in sorted(attrs):
        parts.append(f' {qname}="{_attr_escape(value)}"')
    out.append("".join(parts) + ">")
    if el.text:
        out.append(_text_escape(el.text))
    inner = {**rendered, **mine}
    for child in el:
        if child is exclude:
            pass
        elif isinstance(child.tag, str):
            _c14n_element(child, inner, comments, out, exclude)
        elif comments and child.tag is _comment_tag():
            out.append(f"<!--{child.text or ''}-->")
        elif child.tag is _pi_tag():
            body = f"{child.target} {child.text}" if child.text else child.target
            out.append(f"<?{body}?>")
        if child.tail:
            out.append(_text_escape(child.tail))
    out.append(f"</{name}>")


def _qname(tag: str, prefix: str | None) -> str:
    local = tag.rsplit("}", 1)[-1]
    return f"{prefix}:{local}" if prefix else local


def _text_escape(t: str) -> str:
    return t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#xD;")


def _attr_escape(t: str) -> str:
    return (t.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
            .replace("\t", "&#x9;").replace("\n", "&#xA;").replace("\r", "&#xD;"))


def _comment_tag():
    from lxml import etree
    return etree.Comment


def _pi_tag():
    from lxml import etree
    return etree.ProcessingInstruction
