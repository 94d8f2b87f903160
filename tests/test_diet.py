"""A meal suggested to the user keeps to what they told of their diet
(assistant/agent/checks/diet.py)."""

from __future__ import annotations

import pytest

from assistant.agent.checks.check import Verdict
from assistant.agent.checks.diet import DietCheck, excluded_foods, named_food
from assistant.agent.events import UserText
from assistant.agent.tools import Stores
from tests.agent_helpers import ScriptedStream, say
from tests.test_agent import make_agent


def test_a_diet_leaves_out_its_family_of_foods() -> None:
    foods = excluded_foods("Name: Ilse\nDiet: vegetarian\nAllergic to: sesame seeds")
    assert {"chicken", "salmon", "sesame", "seed"} <= set(foods)
    assert "cheese" not in foods
    assert "cheese" in excluded_foods("Diet: vegan")


def test_a_fish_eater_may_have_fish() -> None:
    foods = excluded_foods("Diet: no meat; eats fish")
    assert "lamb" in foods and "salmon" not in foods


@pytest.mark.parametrize(
    ("sentence", "named"),
    [
        ("How about roast chicken with potatoes?", "chicken"),
        ("Try a lentil curry with rice.", None),
        ("A vegan cheese toastie would work.", None),
        ("Make it without ham this time.", None),
        ("Grilled prawns are quick.", "prawn"),
        # A list after the word that leaves food out is left out whole.
        ("It has no bacon, ham, salmon or chicken in it.", None),
        ("No bacon here, but fried chicken on the side.", "chicken"),
    ],
)
def test_a_sentence_names_an_excluded_food(sentence: str, named: str | None) -> None:
    assert named_food(sentence, excluded_foods("Diet: vegetarian")) == named


def test_a_first_sentence_naming_an_excluded_food_asks_again_a_later_one_is_left_out() -> None:
    first = DietCheck(excluded_foods("Diet: vegetarian"))
    assert first.feed("Fry some bacon with eggs. Then") == "" and first.named == "bacon"
    # Past a sentence already shown, asked again, the user would see two meals.
    check = DietCheck(excluded_foods("Diet: vegetarian"))
    shown = (
        check.feed("Here is an idea. ")
        + check.feed("Fry some bacon with eggs. Then")
        + check.flush()
    )
    assert shown == "Here is an idea. Then" and check.named is None and check.dropped


def test_a_cheer_waits_for_the_meal_it_opens() -> None:
    check = DietCheck(excluded_foods("Diet: vegetarian"))
    assert check.feed("Sure! ") == "" and check.feed("Try a lamb curry. ") == ""
    assert check.named == "lamb", "asked again: the cheer was never shown"
    check = DietCheck(excluded_foods("Diet: vegetarian"))
    shown = check.feed("Sure! ") + check.feed("Try a lentil curry. ") + check.flush()
    assert shown == "Sure! Try a lentil curry. " and check.verdict is Verdict.PASS
    check = DietCheck(excluded_foods("Diet: vegetarian"))
    assert check.feed("Of course.") + check.flush() == "Of course."
    # A meal written as one long sentence: the cheer is said once its first words name none.
    check = DietCheck(excluded_foods("Diet: vegetarian"))
    assert check.feed("Sure! Here is a simple dinner of rice, beans, peas, carrots") == "Sure! "
    assert check.feed(" and ham.") + check.flush() == "" and check.dropped


def test_a_meal_naming_what_the_user_does_not_eat_is_asked_again(stores: Stores) -> None:
    llm = ScriptedStream(
        say("Noted."), say("Try a chicken stir-fry tonight."), say("Try a tofu stir-fry tonight.")
    )
    agent = make_agent(llm, stores)
    agent.respond(UserText("I'm vegetarian."))
    turn = agent.respond(UserText("What should I cook for dinner?"))
    assert turn.reply == "Try a tofu stir-fry tonight."
    assert "does not eat chicken" in llm.calls[2][-2]["content"]


def test_asked_again_a_sentence_naming_an_excluded_food_is_left_out() -> None:
    check = DietCheck(excluded_foods("Diet: vegan"), dropping=True)
    shown = check.feed("Try a bean chilli. Or a chicken breast. Or dal. ") + check.flush()
    assert shown == "Try a bean chilli. Or dal. " and check.dropped and check.named is None
