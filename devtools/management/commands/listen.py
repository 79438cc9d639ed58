from __future__ import annotations

import signal
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.management.commands._account_args import account_or_error
from accounts.selectors import signing_secret_get
from devtools.listener import DEFAULT_PORT, ListenServer, listener_url, printer
from devtools.record import listener_publish, listener_withdraw
from devtools.tls import TlsFiles, listen_dir, tls_files

PRODUCTION_REFUSAL = (
    "This is a production configuration (REDIS_URL set, DEBUG=false): it delivers webhooks to public addresses "
    "only, never to listen. Use it with make run's embedded mode or DEBUG=true, or pass --force."
)


class Command(BaseCommand):
    help = (
        "Receive webhooks locally: an HTTPS receiver on 127.0.0.1 that prints every delivery and checks its "
        "signature. Local runs (SQLite or DEBUG) deliver to it; Ctrl-C stops it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, help=f"default {DEFAULT_PORT}, or a free port when it is taken")
        secret = parser.add_mutually_exclusive_group()
        secret.add_argument("--account", metavar="EMAIL", help="check signatures with this account's signing secret")
        secret.add_argument("--secret", help="check signatures with this signing secret")
        parser.add_argument(
            "--status", type=int, default=200, help="answer every delivery with it (try 503 to watch retries)"
        )
        parser.add_argument("--force", action="store_true", help="start even in a production configuration")

    def handle(
        self,
        *args: Any,
        port: int | None,
        account: str | None,
        secret: str | None,
        status: int,
        force: bool,
        **options: Any,
    ) -> None:
        if not settings.WEBHOOK_TRUST_LISTENER and not force:
            raise CommandError(PRODUCTION_REFUSAL)
        if not 200 <= status <= 599:
            raise CommandError("--status must be from 200 to 599")
        secret = self._checking_secret(account=account, secret=secret)
        tls = tls_files(listen_dir())
        server = ListenServer(port=port, tls=tls, on_arrival=printer(self._say, secret=secret, status=status))
        self._serve(server, tls)

    def _checking_secret(self, *, account: str | None, secret: str | None) -> str | None:
        """The secret signatures are checked with, said on the first line."""
        if account is None:
            self._say(
                "Signatures are checked with the secret given."
                if secret
                else "Signatures are not checked: give --account EMAIL or --secret SECRET to check them."
            )
            return secret
        secret = signing_secret_get(account_id=account_or_error(account).id)
        if secret is None:
            self._say(
                f"{account} has no signing secret: its webhooks arrive unsigned. Make one with "
                f"`manage.py signingsecret {account} generate`, then start listen again."
            )
        else:
            self._say(f"Signatures are checked with the signing secret of {account}, as it is now.")
        return secret

    def _serve(self, server: ListenServer, tls: TlsFiles) -> None:
        # Ctrl-C, or a SIGTERM, ends serve_forever through the finally below: the record goes with it.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            listener_publish(port=server.port, ca=tls.ca)
            url = listener_url(server.port)
            self._say(f"Listening for webhooks at {url}  (its CA: {tls.ca})")
            if not settings.WEBHOOK_TRUST_LISTENER:
                self._say(f"Deliveries need WEBHOOK_ALLOW_PRIVATE_NETWORKS=true and WEBHOOK_CA_BUNDLE={tls.ca}")
            self._say(f'Send one with "url": "{url}"; each delivery is printed here. Ctrl-C stops.')
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            listener_withdraw()
            server.server_close()

    def _say(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()
