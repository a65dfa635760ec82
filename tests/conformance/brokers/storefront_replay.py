"""A StoreFront "Receiver for Web" site answering from recorded responses (SOURCES.md, Brokers).

It keeps what the reference says a store keeps: the ``CsrfToken`` cookie set by
``Home/Configuration`` and required as a ``Csrf-Token`` header on every later POST (403 otherwise),
the ``CtxsAuthId`` cookie set by a successful logon, and the authentication challenge
(``CitrixWebReceiver-Authenticate``, HTTP 200) that ``Resources/List`` answers without it.
Which recording answers each step is the test's choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.conformance.brokers.replay import Answer, Call, recording

SITE = "/Citrix/StoreWeb/"
CSRF = "597E2BAC2A18AF3816B229D5022B6E2A"  # the value recorded in the reference's example
AUTH_ID = "22BE25569A283D63B1C5668580119320"


@dataclass
class Store:
    auth_methods: str = "storefront/sf3_get_auth_methods.xml"
    login_form: str = "storefront/explicit_login_form.xml"
    login_answer: str = "storefront/login_attempt_success.xml"
    resources: str = "storefront/sf3_resources_list.json"
    launch_status: list[str] = field(default_factory=lambda: ["storefront/sf3_launch_status_success.json"])
    ica: str = "storefront/sf3_launch.ica"
    ica_is_json: bool = False
    auth_methods_body: bytes = b""  # a made list, where a test needs one no recording has
    login_answer_body: bytes = b""  # a made LoginAttempt answer, likewise
    posted_logins: list[dict[str, str]] = field(default_factory=list)

    def route(self, call: Call) -> Answer:
        if not call.path.startswith(SITE):
            return Answer(404)
        step = call.path[len(SITE) :]
        cookies = _cookies(call)
        if step == "Home/Configuration":
            return Answer.xml(
                recording("storefront/home_configuration.xml"),
                [("Set-Cookie", f"CsrfToken={CSRF}; path={SITE}")],
            )
        if call.method == "POST" and (
            not call.headers.get("csrf-token") or call.headers["csrf-token"] != cookies.get("CsrfToken")
        ):
            return Answer(403, b"")  # the reference: 403 on an invalid CSRF token
        if step == "Authentication/GetAuthMethods":
            return Answer.xml(self.auth_methods_body or recording(self.auth_methods))
        if step == "ExplicitAuth/Login":
            return Answer.xml(
                recording(self.login_form), [("Set-Cookie", f"CtxsAuthMethod=ExplicitForms; path={SITE}")]
            )
        if step == "ExplicitAuth/LoginAttempt":
            self.posted_logins.append(dict(call.form))
            answer = self.login_answer_body or recording(self.login_answer)
            if b"AuthenticationStatus" in answer and b"success" in answer:
                return Answer.xml(answer, [("Set-Cookie", f"CtxsAuthId={AUTH_ID}; path={SITE}; HttpOnly")])
            return Answer.xml(answer)
        if step == "Resources/List":
            if cookies.get("CtxsAuthId") != AUTH_ID:
                return Answer(
                    200,
                    b"",
                    [
                        (
                            "CitrixWebReceiver-Authenticate",
                            'reason="TokenRequired",location="Authentication/GetAuthMethods"',
                        )
                    ],
                )
            return Answer(
                200, recording(self.resources), [("Content-Type", "application/json; charset=utf-8")]
            )
        if step.startswith("Resources/GetLaunchStatus/"):
            name = self.launch_status.pop(0) if len(self.launch_status) > 1 else self.launch_status[0]
            return Answer(200, recording(name), [("Content-Type", "application/json")])
        if step.startswith("Resources/LaunchIca/"):
            if cookies.get("CtxsAuthId") != AUTH_ID or call.query.get("CsrfToken") != CSRF:
                return Answer(403, b"")
            if self.ica_is_json:  # the reference: a failed launch answers JSON as text/plain
                return Answer(
                    200,
                    recording("storefront/doc_launch_status_failure.json"),
                    [("Content-Type", "text/plain")],
                )
            return Answer(
                200, recording(self.ica), [("Content-Type", "application/octet-stream; charset=utf-8")]
            )
        return Answer(404)


def _cookies(call: Call) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in call.headers.get("cookie", "").split(";"):
        if "=" in part:
            k, v = part.strip().split("=", 1)
            out[k] = v
    return out
