"""An inspect_ai task for tests/client_harnesses.rs: a generic harness's one-message memory check.

Each sample says something and asks it back in one message, as generic harnesses do; the
`includes` scorer passes when the reply contains the target.
"""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def told_and_asked():
    return Task(
        dataset=[
            Sample(
                input="My favourite colour is teal. What is my favourite colour?",
                target="teal",
            ),
            Sample(
                input="My dog is called Pixel. What is my dog called?",
                target="Pixel",
            ),
        ],
        solver=generate(),
        scorer=includes(),
    )
