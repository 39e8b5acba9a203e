"""Models and the converter: names, strictness, unknown values, round trips."""

from __future__ import annotations

import ast
import copy
import pickle
from pathlib import Path
from typing import Any

import attrs
import pytest

from animalstore_client import ClientValidationError, ErrorBody, NewPet, Pet, PetStatus


def test_pet_round_trips_through_camel_case() -> None:
    """to_dict gives camelCase JSON and from_dict reads it back to an equal Pet."""
    pet = Pet(id=1, name="Rex", category_id=3, status=PetStatus.SOLD)
    data = pet.to_dict()
    assert data == {"id": 1, "name": "Rex", "categoryId": 3, "status": "sold"}
    assert type(data["status"]) is str
    assert Pet.from_dict(data) == pet


def test_none_status_is_left_out_of_to_dict() -> None:
    """An unset status is omitted, not written as null."""
    assert NewPet(name="Rex", category_id=3).to_dict() == {"name": "Rex", "categoryId": 3}
    assert Pet(id=1, name="Rex", category_id=3).to_dict() == {"id": 1, "name": "Rex", "categoryId": 3}


def test_error_body_round_trips() -> None:
    """ErrorBody keeps the service's field names."""
    data = {"code": "not_found", "message": "No pet 7", "status": 404}
    assert ErrorBody.from_dict(data).to_dict() == data


def test_models_are_frozen() -> None:
    """Models cannot be changed after construction."""
    pet = Pet(id=1, name="Rex", category_id=3)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        pet.name = "Max"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"id": "1", "name": "Rex", "categoryId": 3}, "$.id: expected an integer, got '1'"),
        ({"id": 1.0, "name": "Rex", "categoryId": 3}, "$.id: expected an integer, got 1.0"),
        ({"id": False, "name": "Rex", "categoryId": 3}, "$.id: expected an integer, got False"),
        ({"id": 1, "name": 7, "categoryId": 3}, "$.name: expected a string, got 7"),
        ({"id": 1, "name": "Rex"}, "$.categoryId: required field missing"),
        ({"id": 1, "name": "Rex", "categoryId": 3, "status": None}, None),
        ({"id": 1, "name": "Rex", "categoryId": 3, "status": ["sold"]}, "$.status: expected a string"),
        ("Rex", "$: expected a JSON object, got 'Rex'"),
    ],
)
def test_from_dict_is_strict(data: Any, problem: str | None) -> None:
    """Strings are not numbers, floats and bools are not ints, numbers are not strings."""
    if problem is None:
        assert Pet.from_dict(data).status is None
        return
    with pytest.raises(ClientValidationError) as info:
        Pet.from_dict(data)
    assert problem in str(info.value)
    assert info.value.argument == "data"


def test_from_dict_reports_every_problem_with_json_names() -> None:
    """All faults are listed at once, under their JSON names rather than attribute names."""
    with pytest.raises(ClientValidationError) as info:
        NewPet.from_dict({"name": None, "categoryId": "x"})
    message = str(info.value)
    assert "$.name: expected a string, got None" in message
    assert "$.categoryId: expected an integer, got 'x'" in message
    assert "category_id" not in message


def test_unknown_status_is_kept_as_a_pet_status() -> None:
    """A status the SDK does not know stays a PetStatus equal to the new string."""
    pet = Pet.from_dict({"id": 1, "name": "Rex", "categoryId": 3, "status": "adopted"})
    assert pet.status == "adopted"
    assert isinstance(pet.status, PetStatus)
    assert pet.status.value == "adopted"
    assert str(pet.status) == "adopted"
    assert not pet.status.is_known
    assert PetStatus.SOLD.is_known
    assert pet.to_dict()["status"] == "adopted"


def test_known_status_is_the_member_itself() -> None:
    """A known value structures to the enum member, not a copy."""
    assert Pet.from_dict({"id": 1, "name": "R", "categoryId": 3, "status": "sold"}).status is PetStatus.SOLD


def test_unknown_status_pickles_and_copies() -> None:
    """A Pet with an unknown status survives pickle and deepcopy."""
    pet = Pet.from_dict({"id": 1, "name": "Rex", "categoryId": 3, "status": "adopted"})
    for clone in (pickle.loads(pickle.dumps(pet)), copy.deepcopy(pet)):
        assert clone == pet
        assert clone.status == "adopted"
        assert isinstance(clone.status, PetStatus)
    assert pickle.loads(pickle.dumps(PetStatus.PENDING)) is PetStatus.PENDING


def test_pet_status_constructor_stays_strict() -> None:
    """PetStatus('adopted') still raises: unknown values come only from the service."""
    with pytest.raises(ValueError, match="adopted"):
        PetStatus("adopted")


def test_pet_status_is_a_str_enum() -> None:
    """Members compare equal to and print as their wire values."""
    assert PetStatus.AVAILABLE == "available"  # type: ignore[comparison-overlap]  # mypy misses the str mixin
    assert str(PetStatus.PENDING) == "pending"
    assert f"{PetStatus.SOLD}" == "sold"
    assert [member.value for member in PetStatus] == ["available", "pending", "sold"]


def test_list_fast_path_keeps_unknown_statuses_among_known_ones() -> None:
    """A list mixing known, absent and unknown statuses keeps each one as sent."""
    from animalstore_client._core.serde import structure

    data = [
        {"id": 1, "name": "A", "categoryId": 1, "status": "sold"},
        {"id": 2, "name": "B", "categoryId": 1},
        {"id": 3, "name": "C", "categoryId": 1, "status": "adopted"},
        {"id": 4, "name": "D", "categoryId": 1, "status": None},
    ]
    pets = structure(data, list[Pet])
    assert [pet.status for pet in pets] == [PetStatus.SOLD, None, "adopted", None]
    assert pets[0].status is PetStatus.SOLD
    assert isinstance(pets[2].status, PetStatus)


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ({"id": True, "name": "X", "categoryId": 1}, "$[49].id: expected an integer, got True"),
        ({"id": 50, "name": "X", "categoryId": 1.0}, "$[49].categoryId: expected an integer, got 1.0"),
        ({"id": 50, "name": None, "categoryId": 1}, "$[49].name: expected a string, got None"),
        ({"id": 50, "categoryId": 1}, "$[49].name: required field missing"),
        ({"id": 50, "name": "X", "categoryId": 1, "status": ["sold"]}, "$[49].status: expected a string, got ['sold']"),
        ("not an object", "$[49]: expected a JSON object, got 'not an object'"),
    ],
)
def test_list_fast_path_hands_faults_to_the_checked_path(bad: object, problem: str) -> None:
    """One bad item among good ones is reported by index, exactly as the checked hooks word it."""
    from animalstore_client._core.serde import StructureError, structure

    data: list[object] = [{"id": i, "name": f"p{i}", "categoryId": 1} for i in range(100)]
    data[49] = bad
    with pytest.raises(StructureError) as info:
        structure(data, list[Pet])
    assert problem in info.value.problems


def test_one_unknown_status_keeps_the_page_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page with a status the SDK does not know is built without the checked hooks, and keeps the value."""
    from animalstore_client._core import serde as _serde

    def no_hooks() -> None:
        raise AssertionError("the checked path ran")

    monkeypatch.setattr(_serde, "_converter", no_hooks)
    data = [{"id": i, "name": f"p{i}", "categoryId": 1, "status": "available"} for i in range(100)]
    data[50]["status"] = "reserved"
    pets = _serde.structure(data, list[Pet])
    assert pets[50].status == "reserved"
    assert isinstance(pets[50].status, PetStatus)
    assert pets[49].status is PetStatus.AVAILABLE


def test_pets_parsed_from_a_page_are_the_objects_the_constructor_builds() -> None:
    """The parser sets Pet's slots directly; the result equals, hashes, pickles and reprs as Pet(...) does."""
    from animalstore_client._core.models import pet_status_from_wire
    from animalstore_client._core.serde import structure

    data = [
        {"id": 7, "name": "Rex", "categoryId": 3, "status": "sold"},
        {"id": 8, "name": "Tom", "categoryId": 1},
        {"id": 9, "name": "Ada", "categoryId": 2, "status": "adopted"},
    ]
    expected = [
        Pet(7, "Rex", 3, PetStatus.SOLD),
        Pet(8, "Tom", 1),
        Pet(9, "Ada", 2, pet_status_from_wire("adopted")),
    ]
    parsed = structure(data, list[Pet])
    assert parsed == expected
    for pet, twin in zip(parsed, expected, strict=True):
        assert type(pet) is Pet
        assert attrs.asdict(pet, recurse=False) == attrs.asdict(twin, recurse=False)
        assert hash(pet) == hash(twin)
        assert repr(pet) == repr(twin)
        assert pickle.loads(pickle.dumps(pet)) == twin
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            pet.name = "changed"  # type: ignore[misc]


def test_the_fast_parser_sets_every_field_pet_has() -> None:
    """Adding a field to Pet without teaching the parser to set it fails here, not in production."""
    from animalstore_client._core import models as _models

    setters = (_models._SET_ID, _models._SET_NAME, _models._SET_CATEGORY_ID, _models._SET_STATUS)
    assert [f.name for f in attrs.fields(Pet)] == ["id", "name", "category_id", "status"]
    assert len(setters) == len(attrs.fields(Pet))


def test_every_model_defined_in_models_is_given_to_the_converter() -> None:
    """A model defined in _models.py but left out of MODELS fails here; _serde names none itself."""
    from animalstore_client._core import models as _models
    from animalstore_client._core import serde as _serde

    # Read from the source: the public classes report animalstore_client as their __module__.
    classes = [
        node.name for node in ast.parse(Path(_models.__file__).read_text()).body if isinstance(node, ast.ClassDef)
    ]
    defined: set[type[Any]] = {getattr(_models, name) for name in classes if attrs.has(getattr(_models, name))}
    given: set[type[Any]] = set(_models.MODELS)
    assert given == defined
    assert list(_models.MODELS) == _serde._MODELS


@pytest.mark.parametrize("model", ["NewPet", "Pet"])
def test_a_status_given_as_its_string_is_the_member(model: str) -> None:
    """NewPet and Pet store a known status string as its member: equal, identical, serialisable."""
    pet = (
        NewPet(name="Rex", category_id=1, status="available")
        if model == "NewPet"
        else Pet(id=1, name="Rex", category_id=1, status="available")
    )
    assert pet.status is PetStatus.AVAILABLE
    assert pet.to_dict()["status"] == "available"
    assert pet == attrs.evolve(pet, status=PetStatus.AVAILABLE)


@pytest.mark.parametrize("bad", ["availble", "AVAILABLE", 3, b"sold", ""])
def test_a_status_that_is_no_member_is_refused_at_construction(bad: object) -> None:
    """Anything but a member, a known string or None is a ClientValidationError naming status."""
    with pytest.raises(ClientValidationError, match="status must be a PetStatus or one of") as info:
        NewPet(name="Rex", category_id=1, status=bad)  # type: ignore[arg-type]
    assert (info.value.argument, info.value.value) == ("status", bad)


def test_an_unknown_status_from_the_service_still_builds_a_pet() -> None:
    """The service's new values arrive as PetStatus objects, which construction keeps as they are."""
    pet = Pet.from_dict({"id": 1, "name": "Rex", "categoryId": 1, "status": "adopted"})
    assert pet.status == "adopted"
    assert attrs.evolve(pet, name="Max").status is pet.status


def test_the_fast_path_builds_the_same_pets_as_their_init() -> None:
    """Pets built around attrs' __init__ equal, hash and compare field for field like Pet(...) (Pet's fields listed)."""
    from animalstore_client._core.serde import structure

    data = [{"id": 7, "name": "Rex", "categoryId": 3, "status": "pending"}, {"id": 8, "name": "Tom", "categoryId": 1}]
    built = structure(data, list[Pet])
    expected = [Pet(7, "Rex", 3, PetStatus.PENDING), Pet(8, "Tom", 1, None)]
    assert built == expected
    assert [hash(pet) for pet in built] == [hash(pet) for pet in expected]
    assert [attrs.astuple(pet) for pet in built] == [attrs.astuple(pet) for pet in expected]
    assert [field.name for field in attrs.fields(Pet)] == ["id", "name", "category_id", "status"]
