from django.urls import path

from judging.views import hits, judge

app_name = "judging"
urlpatterns = [
    path("judge/", judge.judge_start, name="start"),
    path("judge/next/", judge.judge_next, name="next"),
    path("judge/answer/", judge.judge_answer, name="answer"),
    path("judge/undo/", judge.judge_undo, name="undo"),
    path("judge/instructions/", judge.judge_instructions, name="instructions"),
    path("hits/campaign/<uuid:public_id>/", hits.prolific_entry, name="prolific_entry"),
    path("hits/<uuid:public_id>/", hits.hit_page, name="hit"),
    path("hits/<uuid:public_id>/answer/", hits.hit_answer, name="hit_answer"),
    path("hits/<uuid:public_id>/submit/", hits.hit_submit, name="hit_submit"),
]
