"""Create or update a judge or researcher account in its role's group."""

import getpass
import os
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import MaxLengthValidator
from django.db import transaction

ROLES = {"assessor": "assessors", "crowd": "crowd", "researcher": "researchers"}
EXIT_BAD_USAGE = 2


class Command(BaseCommand):
    help = (
        "Create or update USERNAME in the group of --role (assessor: dedicated assessors, tournament mode; crowd: "
        "local crowd workers; researcher). The password comes from TOPPREF_PASSWORD, else an interactive prompt."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", metavar="USERNAME")
        parser.add_argument(
            "--role", required=True, choices=sorted(ROLES), help="assessor, crowd or researcher"
        )

    def handle(self, *args, username: str, role: str, **options):
        username = username.strip()
        if not username:
            raise CommandError("USERNAME must not be empty", returncode=EXIT_BAD_USAGE)
        # The rules of Django's own sign-up forms: letters, digits and @.+-_ only, at most 150 characters.
        model = get_user_model()
        try:
            model.username_validator(username)
            MaxLengthValidator(model._meta.get_field("username").max_length)(username)
        except ValidationError as error:
            raise CommandError(
                f"USERNAME {username!r}: {' '.join(error.messages)}", returncode=EXIT_BAD_USAGE
            ) from None
        password = os.environ.get("TOPPREF_PASSWORD")
        if not password:
            if not sys.stdin.isatty():
                raise CommandError(
                    "no password: set TOPPREF_PASSWORD or run the command in a terminal to be asked for one",
                    returncode=EXIT_BAD_USAGE,
                )
            password = getpass.getpass(f"Password for {username}: ")
            if not password or password != getpass.getpass("Again: "):
                raise CommandError("the passwords were empty or did not match", returncode=EXIT_BAD_USAGE)
        with transaction.atomic():
            group, _ = Group.objects.get_or_create(name=ROLES[role])
            user, created = get_user_model().objects.get_or_create(username=username)
            user.set_password(password)
            user.save()
            user.groups.add(group)
        verb = "created" if created else "updated"
        self.stdout.write(f"{verb} user {username} with role {role} (group {group.name})")
