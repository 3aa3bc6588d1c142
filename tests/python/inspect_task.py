"""An inspect_ai task for tests/inspect_ai.rs: one sample a generic harness sends as one message,
scored by whether the answer includes the target."""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def one_message_recall():
    return Task(
        dataset=[
            Sample(
                input="My favourite colour is teal. What is my favourite colour?",
                target="teal",
            )
        ],
        solver=generate(),
        scorer=includes(),
    )
