from tests.api.conftest import (  # noqa: F401
    api,
    assessor,
    crowd_user,
    demo_collection,
    draft_campaign,
    finished_campaign,
    other_researcher,
    outsiders,
    researcher,
    staff,
)
