"""Create (or reset) the demo's assessor and crowd accounts and print how to log in."""

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

DEMO_JUDGES = (
    ("assessor", "assessors", "dedicated assessor: judges the open tournament"),
    ("crowd", "crowd", "crowd worker: takes the open crowd campaign's HITs"),
)


class Command(BaseCommand):
    help = "Create or reset the demo judge accounts 'assessor' and 'crowd' (development only) and print their logins."

    def add_arguments(self, parser):
        parser.add_argument(
            "--password", help="the same password for both (default: a fresh random one each, printed)"
        )
        parser.add_argument("--url", default="http://127.0.0.1:8000")

    def handle(self, *args, password: str | None, url: str, **options):
        if settings.IS_PRODUCTION:
            raise CommandError("demo_judges is for development; use `toppref manage user_add` in production.")
        lines = [self.style.SUCCESS("\nJudge in the browser:") + f"\n  page:     {url}/judge/"]
        for username, group, role in DEMO_JUDGES:
            secret = password or secrets.token_urlsafe(9)
            user, _ = get_user_model().objects.get_or_create(username=username)
            user.set_password(secret)
            user.save()
            user.groups.add(Group.objects.get_or_create(name=group)[0])
            lines.append(f"  {username:<9} password {secret}   ({role})")
        self.stdout.write("\n".join(lines) + "\n")
