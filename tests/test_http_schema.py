"""Property-based requests against the OpenAPI document of the real server (schemathesis): valid and
invalid parameters and bodies for every operation, with the token; none may make the server fail (500)."""

from __future__ import annotations

import pytest
from conftest import workspace
from http_helpers import Server

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402

jsonschema_rs = pytest.importorskip("jsonschema_rs")  # schemathesis's own validator

EXAMPLES = 600


def test_no_generated_request_makes_the_server_fail(api, repo):
    api.lane_create("feat")
    (workspace(repo, "feat") / "f.txt").write_text("f\n")
    api.commit("Add f", "coder-1", lane="feat")
    api.task_create("first task")
    api.board_post("Which schema?", "coder-1", kind="question")
    with Server(repo) as server:
        schema = schemathesis.openapi.from_url(server.url + "/api/openapi.json")
        # The event stream never ends by design; the API tests read it.
        schema = schema.exclude(operation_id="get_events")
        strategy = schema.as_strategy(GenerationMode.POSITIVE) | schema.as_strategy(GenerationMode.NEGATIVE)
        calls = []
        document = server.get("/api/openapi.json").json

        # No shrinking: each step is a request, and the first failing one already names the route and input.
        @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(case=strategy)
        def check(case):
            response = case.call(headers={"Authorization": f"Bearer {server.token}"}, timeout=60)
            calls.append((case.method, case.path, response.status_code))
            assert response.status_code < 500, (case.method, case.formatted_path, case.query, case.body,
                                                response.text)
            if response.status_code >= 400:
                assert {"error", "message", "hint"} <= set(response.json()), response.text
            else:  # the record is what the document says (each record publishes its own schema)
                documented = document["paths"][case.operation.path][case.method.lower()]["responses"]["200"]
                schema = documented["content"]["application/json"]["schema"]
                assert jsonschema_rs.is_valid(schema, response.json()), (case.method, case.formatted_path,
                                                                         schema, response.text[:2000])

        check()
        assert server.proc.poll() is None, "the server died"
    assert not jsonschema_rs.is_valid({"type": "array"}, {})  # the validator does reject
    operations = {(method, path) for method, path, _ in calls}
    assert len(operations) > 30, f"only {len(operations)} operations were exercised"
    assert any(status == 200 for *_, status in calls) and any(status == 400 for *_, status in calls)
