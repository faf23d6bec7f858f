"""Images (issue 31) over the real daemon: sent with a question (`ctxkeep ask --image`),
stored once by hash, shown to a model with vision and counted (the stand-in charges a fixed
256 tokens each; the estimator learns it), named in place for one without, paged, fetched,
exported and imported; refused clearly when they are not images or too many; set aside by
level 1 once old."""

import base64
import json

import pytest

from conftest import wait_terminal
from ctxkeep.clients.errors import CtxkeepError
from ctxkeep.protocol.events import ResponseGeneration
from ctxkeep.protocol.images import ImageInput

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
DOT = ImageInput(data=base64.b64encode(PNG).decode(), name="dot.png")


def test_an_image_is_seen_counted_paged_fetched_exported_and_imported(daemon, standin, tmp_path):
    (tmp_path / "dot.png").write_bytes(PNG)
    done = daemon.cli("ask", "--model", "vision:4b", "--image", str(tmp_path / "dot.png"), "--json",
                      "What is in this picture?")
    assert done.returncode == 0, done.stderr
    end = json.loads(done.stdout)
    sent = standin.chats[-1]
    assert sent.body["messages"][-1]["images"] == [DOT.data]
    assert end["token_count"] == sent.prompt_tokens  # exact, the image's 256 tokens in it
    with daemon.client() as c:
        (s,) = c.sessions().sessions
        question = c.history(s.id).messages[0]
        (ref,) = question.images
        assert (ref.name, ref.media_type, ref.size) == ("dot.png", "image/png", len(PNG))
        assert base64.b64decode(c.image(ref.hash).data) == PNG
    shown = daemon.cli("show", s.id).stdout
    assert "[image: dot.png, image/png" in shown
    exported = daemon.cli("export", s.id, "--format", "json").stdout
    (tmp_path / "s.json").write_text(exported)
    assert daemon.cli("import", str(tmp_path / "s.json"), "--name", "copy").returncode == 0
    with daemon.client() as c:
        copy = c.session("copy").session
        assert c.history(copy.id).messages[0].images == [ref]  # the same bytes, stored once


def test_a_model_without_vision_reads_the_images_name_and_the_estimator_learns_image_cost(client, standin):
    s = client.create_session(model="qwen2.5:7b", name="no-vision").session
    accepted = client.send(s.id, "Describe it", images=[DOT])
    assert any("qwen2.5:7b does not see images" in w for w in accepted.warnings)  # said, not silent
    end, _ = wait_terminal(client, accepted.generation_id)
    assert isinstance(end, ResponseGeneration)
    last = standin.chats[-1].body["messages"][-1]
    assert "images" not in last and last["content"] == "Describe it\n\n[image: dot.png]"
    # a vision model: the first exact count with an image teaches its cost to the next session's estimate
    first = client.create_session(model="vision:4b", name="v1").session
    seen = client.send(first.id, "One", images=[DOT])
    assert not seen.warnings
    wait_terminal(client, seen.generation_id)
    second = client.create_session(model="vision:4b", name="v2").session
    end, _ = wait_terminal(client, client.send(second.id, "Two", images=[DOT]).generation_id)
    prior_error = 768 - 256  # the cautious prior against the stand-in's cost
    assert abs(end.prompt_estimate - end.token_count) < prior_error / 2, (end.prompt_estimate, end.token_count)


@pytest.mark.parametrize("images, why", [
    ([ImageInput(data="not base64!")], "not base64"),
    ([ImageInput(data=base64.b64encode(b"plain text, not a picture").decode(), name="notes.txt")],
     "not a PNG, JPEG, GIF or WebP"),
    ([DOT] * 9, "at most 8"),
])
def test_what_is_not_an_image_is_refused_and_nothing_is_stored(client, images, why):
    s = client.create_session(model="vision:4b", name="refusals").session
    with pytest.raises(CtxkeepError, match=why) as refused:
        client.send(s.id, "look", images=images)
    assert refused.value.code == "invalid_argument"
    assert client.history(s.id).total == 0


def test_level_one_sets_an_old_image_aside_for_its_name(client, standin):
    s = client.create_session(model="vision:4b", name="old-image", num_ctx=2048).session
    wait_terminal(client, client.send(s.id, "Look at this", images=[DOT]).generation_id)
    for turn in range(40):
        end, _ = wait_terminal(client, client.send(s.id, f"turn {turn} " + "more words here " * 30).generation_id)
        assert isinstance(end, ResponseGeneration), end
        first = [m for m in standin.chats[-1].body["messages"] if m["role"] == "user"][:1]
        if first and "images" not in first[0] and "[image: dot.png]" in first[0]["content"]:
            break
    else:
        pytest.fail("the image was never set aside")
    assert turn >= 3 and not standin.truncations  # not before image_turns questions followed it
