"""TLS for a grading cluster: a certificate authority of the grade's own, and certificates for
the scheduler, the workers and the grading client (``chaos grade-certs DIR``).

Why: Dask executes whatever a connected client submits, and a grading worker runs ``chaos run``
as root (it drives Docker and iptables). A scheduler that anyone on the network can reach is root
on every worker. Over ``tls://`` Dask requires a certificate signed by the cluster's CA on *both*
ends of every connection (``distributed.security.Security``: ``CERT_REQUIRED`` for servers and
clients alike), so only a holder of one of these keys can connect, submit, or pose as a worker.

Files (``ca-key.pem`` is needed only to make more certificates: keep it off the workers):

    ca.pem            the authority every party trusts (copy it everywhere)
    ca-key.pem        its key
    scheduler.pem     scheduler-key.pem    for ``dask scheduler``
    worker.pem        worker-key.pem       for every ``dask worker``
    client.pem        client-key.pem       for ``chaos grade --certs DIR``

Keys are written owner-only (0600), never over an existing file.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROLES = ("scheduler", "worker", "client")
CA = "ca.pem"
CA_KEY = "ca-key.pem"
DAYS = 365


def cert_file(folder: Path, role: str) -> Path:
    return folder / f"{role}.pem"


def key_file(folder: Path, role: str) -> Path:
    return folder / f"{role}-key.pem"


def _write(path: Path, data: bytes, mode: int) -> None:
    # O_EXCL: never replace a key someone already distributed; O_NOFOLLOW: never write through a
    # link planted in the folder
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _names(hosts: Sequence[str]) -> list[Any]:
    from cryptography import x509

    out: list[Any] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    for h in hosts:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            out.append(x509.DNSName(h))
    return out


def make(folder: Path, *, hosts: Sequence[str] = (), days: int = DAYS) -> list[Path]:
    """Make the CA and the three certificates in ``folder`` (created, or empty); returns the
    files written. ``hosts``: names or addresses of the scheduler, for its certificate's subject
    alternative names (Dask does not check host names; other TLS clients may). Raises ValueError
    when ``folder`` holds anything already."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise ValueError(f"{folder}: not a folder")
    if folder.exists() and any(folder.iterdir()):
        raise ValueError(f"{folder}: not empty; certificates are made in a new or empty folder")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def base(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey) -> Any:
        return _builder(subject, issuer, key, now, days)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("chaos grade CA")
    signs_only = x509.KeyUsage(
        digital_signature=False, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
        encipher_only=False, decipher_only=False,
    )  # fmt: skip
    ca_cert = (
        base(ca_name, ca_name, ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(signs_only, critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    written = [folder / CA_KEY, folder / CA]
    _write(folder / CA_KEY, _pem_key(ca_key), 0o600)
    _write(folder / CA, ca_cert.public_bytes(serialization.Encoding.PEM), 0o644)
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        # every party both listens and connects (a worker serves its peers and calls the
        # scheduler), so each certificate is good for both ends
        cert = (
            base(_name(f"chaos grade {role}"), ca_name, key)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(x509.SubjectAlternativeName(_names(hosts)), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        _write(key_file(folder, role), _pem_key(key), 0o600)
        _write(cert_file(folder, role), cert.public_bytes(serialization.Encoding.PEM), 0o644)
        written += [key_file(folder, role), cert_file(folder, role)]
    return written


# cryptography is imported where it is used: `chaos --help` does not load it


def _name(cn: str) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "chaos grade"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _pem_key(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    pem: bytes = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return pem


def _builder(subject: Any, issuer: Any, key: Any, now: datetime.datetime, days: int) -> Any:
    """A certificate of ``subject`` by ``issuer`` for ``key``, valid from a little before ``now``
    for ``days``."""
    from cryptography import x509

    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
    )


def client_security(folder: Path) -> Any:
    """The grading client's ``distributed.security.Security`` from a folder :func:`make` filled
    (ValueError naming a missing file)."""
    from distributed.security import Security

    need = [folder / CA, cert_file(folder, "client"), key_file(folder, "client")]
    missing = [p.name for p in need if not p.is_file()]
    if missing:
        raise ValueError(
            f"--certs {folder}: no {', '.join(missing)} there (`chaos grade-certs DIR` makes them)"
        )
    return Security(
        tls_ca_file=str(need[0]),
        tls_client_cert=str(need[1]),
        tls_client_key=str(need[2]),
        require_encryption=True,
    )
