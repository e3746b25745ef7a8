"""factory_boy factories for the pools models (also used by other apps' tests)."""

import factory

from pools.models import Collection, GradedJudgment, Item, Topic


class CollectionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Collection
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"collection-{n}")
    is_strict = True


class TopicFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Topic

    collection = factory.SubFactory(CollectionFactory)
    topic_id = factory.Sequence(lambda n: f"{n // 10 + 1}_{n % 10 + 1}")
    question = factory.Sequence(lambda n: f"Question number {n}?")


class ItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Item

    collection = factory.SubFactory(CollectionFactory)
    docid = factory.Sequence(lambda n: f"doc{n}")
    text = factory.Sequence(lambda n: f"Passage number {n}.")


class GradedJudgmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = GradedJudgment

    topic = factory.SubFactory(TopicFactory)
    item = factory.SubFactory(ItemFactory, collection=factory.SelfAttribute("..topic.collection"))
    grade = 2
