"""Create (or reset) the demo researcher account and print how to log in."""

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create or reset the demo admin account (development only) and print its login."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument("--password", help="default: a fresh random password, printed")
        parser.add_argument("--url", default="http://127.0.0.1:8000")

    def handle(self, *args, username: str, password: str | None, url: str, **options):
        if settings.IS_PRODUCTION:
            raise CommandError(
                "demo_superuser is for development; use `manage.py createsuperuser` in production."
            )
        password = password or secrets.token_urlsafe(9)
        user, _ = get_user_model().objects.get_or_create(
            username=username, defaults={"email": f"{username}@localhost"}
        )
        user.is_staff = True
        user.is_superuser = True
        user.set_password(password)
        user.save()
        self.stdout.write(
            self.style.SUCCESS("\nLog in as a researcher:")
            + f"\n  site:     {url}/\n  admin:    {url}/admin/\n  username: {username}\n  password: {password}\n"
        )
