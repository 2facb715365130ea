"""The live plan browser has a view switch (issue 24: "add a view switch for jobs / each job kind / Plan to every
output", so the op-level job view with its SBP section is reachable from a live %%flowjob output): PlanBrowser's
`views` trait lists all jobs, each job kind and the Plan; the toolbar's select shows them, the current one chosen,
and a choice asks the kernel for that view. The saved output's switch is test_lab_reopen's."""

from __future__ import annotations

import pytest

from tests.e2e.harness import harness_page, missing

if missing():
    pytest.skip(missing(), allow_module_level=True)


def test_the_live_browser_switches_between_all_jobs_each_kind_and_the_plan():
    with harness_page() as page:
        page.evaluate("() => window.flowlab.mount('nbpy_pad_plan')")
        # the kernel sets `view` with the payload it draws (PlanBrowser.show), then `views` once
        page.evaluate("() => { window.model.traits.view = 'plan'; "
                      "window.model.set('views', ['jobs', 'user', 'push', 'pull', 'main', 'plan']); }")
        switch = page.locator(".fl-toolbar select.fl-view-switch")
        assert switch.is_visible()
        assert switch.locator("option").all_text_contents() == [
            "all jobs", "user jobs", "push jobs", "pull jobs", "main jobs", "Plan"]
        assert switch.input_value() == "plan"
        switch.select_option("user")
        assert page.evaluate("window.model.sent.at(-1)") == {"type": "show", "view": "user"}
