"""The official OpenAI and Anthropic Python SDKs against `triage sim --serve`.

Run by crates/cli/tests/integration/interop.rs in a venv with the versions pinned in requirements.txt:

    python sdk_clients.py healthy=http://127.0.0.1:P1 client-retries=http://127.0.0.1:P2 \
        upstream-cut=http://127.0.0.1:P3

Each argument names a scenario and the root URL of a simulator serving it. Every check uses the
SDKs' public API only, with retries off (the SDK must see what the server said) and a timeout, and
raises on the first difference. Exit status 0: every check held.
"""

import sys
import time

import anthropic
import openai

MODEL = "sim/llama-1.1b-h200"
TIMEOUT = 30.0
checks = []


def check(name):
    def wrap(f):
        checks.append((name, f))
        return f

    return wrap


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def oai(root):
    return openai.OpenAI(base_url=root + "/v1", api_key="sim", max_retries=0, timeout=TIMEOUT)


def ant(root):
    return anthropic.Anthropic(base_url=root, api_key="sim", max_retries=0, timeout=TIMEOUT)


def words(n):
    return " ".join(["word"] * n)


def toks(n):
    return "".join(f"tok{i} " for i in range(n))


# --- healthy: every request shape the SDKs send, streamed and not ---------------------------


@check("openai models.list")
def _(urls):
    models = list(oai(urls["healthy"]).models.list())
    expect([m.id for m in models] == [MODEL], models)
    expect(models[0].object == "model" and isinstance(models[0].created, int), models[0])


@check("openai chat.completions.create (not streamed)")
def _(urls):
    raw = oai(urls["healthy"]).chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "user", "content": words(20)}], max_tokens=4
    )
    expect(raw.http_response.status_code == 200 and raw.http_response.reason_phrase == "OK", raw.http_response)
    r = raw.parse()
    expect(r.object == "chat.completion" and r.id.startswith("chatcmpl-"), r)
    expect(r.choices[0].message.role == "assistant" and r.choices[0].message.content == toks(4), r)
    expect(r.choices[0].finish_reason == "length", r)
    expect(r.usage.completion_tokens == 4 and r.usage.prompt_tokens == 26 and r.usage.total_tokens == 30, r.usage)


@check("openai chat.completions.create (streamed, include_usage)")
def _(urls):
    stream = oai(urls["healthy"]).chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": words(20)}],
        max_tokens=4,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = "", None, None
    for chunk in stream:
        expect(chunk.object == "chat.completion.chunk", chunk)
        for c in chunk.choices:
            text += c.delta.content or ""
            finish = c.finish_reason or finish
        usage = chunk.usage or usage
    expect(text == toks(4) and finish == "length", (text, finish))
    expect(usage is not None and usage.completion_tokens == 4, usage)


@check("openai chat.completions.stream (helper)")
def _(urls):
    with oai(urls["healthy"]).chat.completions.stream(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=3
    ) as stream:
        deltas, done = [], None
        for event in stream:
            if event.type == "content.delta":
                deltas.append(event.delta)
            if event.type == "content.done":
                done = event.content
    expect("".join(deltas) == toks(3) and done == toks(3), (deltas, done))
    # Every live answer ends at max_tokens: the helper reports it as the SDK documents.
    try:
        stream.get_final_completion()
    except openai.LengthFinishReasonError as e:
        expect(e.completion.usage.completion_tokens == 3, e.completion.usage)
        return
    raise AssertionError("the helper did not see finish_reason length")


@check("openai completions.create (legacy, not streamed)")
def _(urls):
    r = oai(urls["healthy"]).completions.create(model=MODEL, prompt=words(10), max_tokens=5)
    expect(r.object == "text_completion" and r.id.startswith("cmpl-"), r)
    expect(r.choices[0].text == toks(5) and r.choices[0].finish_reason == "length", r)
    expect(r.usage.completion_tokens == 5 and r.usage.prompt_tokens == 16, r.usage)


@check("openai completions.create (legacy, streamed)")
def _(urls):
    stream = oai(urls["healthy"]).completions.create(
        model=MODEL, prompt=words(10), max_tokens=5, stream=True, stream_options={"include_usage": True}
    )
    text, finish, usage = "", None, None
    for chunk in stream:
        expect(chunk.object == "text_completion", chunk)
        for c in chunk.choices:
            text += c.text
            finish = c.finish_reason or finish
        usage = chunk.usage or usage
    expect(text == toks(5) and finish == "length", (text, finish))
    expect(usage is not None and usage.completion_tokens == 5, usage)


@check("openai: a prompt past max_model_len is BadRequestError 400")
def _(urls):
    try:
        oai(urls["healthy"]).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": words(40_000)}], max_tokens=4
        )
    except openai.BadRequestError as e:
        expect(e.status_code == 400 and "maximum context length is 32768" in e.message, e)
        expect(e.response.reason_phrase == "Bad Request", e.response)
        return
    raise AssertionError("no error")


@check("anthropic models.list")
def _(urls):
    models = list(ant(urls["healthy"]).models.list())
    expect([m.id for m in models] == [MODEL] and models[0].type == "model", models)
    expect(models[0].created_at.year >= 2025, models[0])


@check("anthropic messages.create (not streamed)")
def _(urls):
    m = ant(urls["healthy"]).messages.create(
        model=MODEL, max_tokens=4, system="be brief", messages=[{"role": "user", "content": words(20)}]
    )
    expect(m.type == "message" and m.role == "assistant" and m.id.startswith("msg_"), m)
    expect([b.type for b in m.content] == ["text"] and m.content[0].text == toks(4), m.content)
    expect(m.stop_reason == "max_tokens", m)
    expect(m.usage.input_tokens == 28 and m.usage.output_tokens == 4, m.usage)


@check("anthropic messages.create (streamed)")
def _(urls):
    stream = ant(urls["healthy"]).messages.create(
        model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "hi"}], stream=True
    )
    kinds = [e.type for e in stream]
    expect(kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds)
    expect(kinds.count("content_block_delta") == 4, kinds)


@check("anthropic messages.stream (helper)")
def _(urls):
    with ant(urls["healthy"]).messages.stream(
        model=MODEL, max_tokens=3, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    expect(text == toks(3), text)
    expect(final.stop_reason == "max_tokens" and final.usage.output_tokens == 3, final)


@check("anthropic: a prompt past max_model_len is BadRequestError 400")
def _(urls):
    try:
        ant(urls["healthy"]).messages.create(
            model=MODEL, max_tokens=4, messages=[{"role": "user", "content": words(40_000)}]
        )
    except anthropic.BadRequestError as e:
        expect(e.status_code == 400 and "maximum context length" in e.message, e)
        expect(e.body["error"]["type"] == "invalid_request_error", e.body)
        return
    raise AssertionError("no error")


# --- incidents: the error each SDK documents ----------------------------------------------


def first_rate_limit(call, error):
    """Send small requests until one is rate limited; the scenario's bursts drain the bucket."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            call()
        except error as e:
            return e
    raise AssertionError("never rate limited")


@check("openai client-retries: RateLimitError 429 with Retry-After")
def _(urls):
    client = oai(urls["client-retries"])
    e = first_rate_limit(
        lambda: client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=1
        ),
        openai.RateLimitError,
    )
    expect(e.status_code == 429 and e.response.headers["retry-after"] == "1", e.response.headers)
    expect(e.response.reason_phrase == "Too Many Requests", e.response)


@check("anthropic client-retries: RateLimitError 429 with Retry-After")
def _(urls):
    client = ant(urls["client-retries"])
    e = first_rate_limit(
        lambda: client.messages.create(model=MODEL, max_tokens=1, messages=[{"role": "user", "content": "hi"}]),
        anthropic.RateLimitError,
    )
    expect(e.status_code == 429 and e.response.headers["retry-after"] == "1", e.response.headers)
    expect(e.body["error"]["type"] == "rate_limit_error", e.body)


@check("openai upstream-cut: APIStatusError 503 from the gateway, streamed or not")
def _(urls):
    for stream in (False, True):
        try:
            oai(urls["upstream-cut"]).chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=4, stream=stream
            )
        except openai.APIStatusError as e:
            expect(isinstance(e, openai.InternalServerError), type(e))
            expect(e.status_code == 503 and e.response.json()["error"]["message"] == "no healthy upstream", e.response)
            expect(e.response.json()["error"]["type"] == "ServiceUnavailableError", e.response)
            expect(e.response.reason_phrase == "Service Unavailable", e.response)
            continue
        raise AssertionError("no error")


@check("anthropic upstream-cut: APIStatusError 503 from the gateway, streamed or not")
def _(urls):
    for stream in (False, True):
        try:
            ant(urls["upstream-cut"]).messages.create(
                model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "hi"}], stream=stream
            )
        except anthropic.APIStatusError as e:
            expect(isinstance(e, anthropic.InternalServerError), type(e))
            expect(e.status_code == 503 and "no healthy upstream" in e.message, e)
            expect(e.body["error"]["type"] == "overloaded_error", e.body)
            continue
        raise AssertionError("no error")


def main(argv):
    urls = dict(a.split("=", 1) for a in argv)
    print(f"openai {openai.__version__}, anthropic {anthropic.__version__}")
    failed = 0
    for name, f in checks:
        started = time.monotonic()
        try:
            f(urls)
        except Exception as e:  # noqa: BLE001 - report every check, then fail
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            continue
        print(f"ok   {name} ({time.monotonic() - started:.2f} s)")
    print(f"sdk checks: {len(checks) - failed} held, {failed} did not")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
