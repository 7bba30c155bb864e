"""A harness session through the real model SDKs: every place a sealed value can ride in a request.

`run(base_url)` sends, with the real `openai`, `anthropic` and `google-genai` SDKs, one request per
place (system, user and tool messages, tool-call arguments, tool enums, headers, query strings,
JSON keys, image, document and file blocks, multipart uploads), streaming and not, and then the same
shapes carrying only near misses. It returns what each request should be found to carry: a list of
(request number, place, sealed id) in the order sent, the place `None` for a clean request.
"""

from __future__ import annotations

import base64
import json
from typing import NamedTuple

SEALED_VALUES = [("seeds.txt:1", "3107713414"), ("times.csv:2", "31.5"),
                 ("labels.txt:3", "quorvantile"), ("runs.txt:1", "4829163057"),
                 ("phrases.txt:1", "quor vantile")]
SEALED_FILE = ("clips/reference.pdf", b"%PDF-1.4 reference flight\n" + bytes(range(256)) * 8)
NEAR_MISSES = "lap 131.5 then 31.51 then 1:31.5, quorvantiles, seed 31077134145, quor-vantiles"
KEYS = {"openai": "sk-test-openai-Zq81xw", "anthropic": "sk-ant-test-Vb27qe",
        "gemini": "AIza-test-Kp55mr"}


class Expect(NamedTuple):
    seq: int  # the request's number in the recording
    chain: str | None  # the place a hit is reported at (None: the request must be clean)
    entry: str  # the sealed id


def png_with(text: str) -> bytes:
    """A small PNG whose text chunk holds `text`."""
    return b"\x89PNG\r\n\x1a\n\x00\x00\x00\x10tEXtComment\x00" + text.encode() + b"\x00" * 40


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def run(base_url: str, streamed_text: list[str]) -> list[Expect]:
    """Send the session through `base_url`; streamed answers' texts go to `streamed_text`."""
    import anthropic
    import openai
    from google import genai
    from google.genai import types

    expect: list[Expect] = []
    seq = 0

    def sent(chain: str | None, entry: str = "") -> None:
        nonlocal seq
        seq += 1
        expect.append(Expect(seq, chain, entry))

    pdf = _b64(SEALED_FILE[1])
    png = _b64(png_with("seed 3107713414"))
    oa = openai.OpenAI(base_url=base_url + "/v1", api_key=KEYS["openai"], max_retries=0)

    def chat(messages: list, **kw: object) -> None:
        oa.chat.completions.create(model="gpt-test", messages=messages, **kw)

    user = {"role": "user", "content": "fly the course"}
    chat([{"role": "system", "content": "The reference lap took 31.50 s."}, user])
    sent("/messages/0/content", "times.csv:2")
    chat([{"role": "user", "content": "The label is QuorVantile."}])
    sent("/messages/0/content", "labels.txt:3")
    chat([user, {"role": "assistant", "content": None, "tool_calls": [{
        "id": "c1", "type": "function",
        "function": {"name": "fly", "arguments": json.dumps({"seed": 3107713414})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "gate seven: quor  vantile"}])
    sent("/messages/1/tool_calls/0/function/arguments", "seeds.txt:1")
    expect.append(Expect(seq, "/messages/2/content", "phrases.txt:1"))
    chat([user], tools=[{"type": "function", "function": {"name": "label", "parameters": {
        "type": "object", "properties": {"label": {"type": "string",
                                                   "enum": ["crosswind", "quorvantile"]}}}}}])
    sent("/tools/0/function/parameters/properties/label/enum/1", "labels.txt:3")
    chat([user], extra_headers={"X-Run-Note": "seed 3107713414"})
    sent("header x-run-note", "seeds.txt:1")  # the OpenAI SDK sends header names in lower case
    chat([user], extra_query={"lap": "0:31.5"})
    sent("target", "times.csv:2")
    chat([user], extra_body={"metadata": {"runs/4829163057/log": "x"}})
    sent("/metadata/runs~1[withheld]~1log (key)", "runs.txt:1")
    chat([{"role": "user", "content": [
        {"type": "text", "text": "what is in the picture?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
        {"type": "file", "file": {"filename": "ref.pdf",
                                  "file_data": f"data:application/pdf;base64,{pdf}"}}]}])
    sent("/messages/0/content/1/image_url/url (base64 image/png)", "seeds.txt:1")
    expect.append(Expect(seq, "/messages/0/content/2/file/file_data (base64 application/pdf)",
                         SEALED_FILE[0]))
    stream = oa.chat.completions.create(model="gpt-test", stream=True, messages=[
        {"role": "user", "content": "seed 3107713414, go"}])
    streamed_text.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
    sent("/messages/0/content", "seeds.txt:1")

    oa.responses.create(model="gpt-test", instructions="reference step 0:31.5",
                        input="fly", tools=[{"type": "function", "name": "label",
                                             "parameters": {"type": "object", "properties": {
                                                 "label": {"enum": ["quorvantile"]}}}}])
    sent("/instructions", "times.csv:2")
    expect.append(Expect(seq, "/tools/0/parameters/properties/label/enum/0", "labels.txt:3"))
    oa.responses.create(model="gpt-test", input=[{"role": "user", "content": [
        {"type": "input_text", "text": "label quorvantile"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{png}"},
        {"type": "input_file", "filename": "ref.pdf",
         "file_data": f"data:application/pdf;base64,{pdf}"}]}])
    sent("/input/0/content/0/text", "labels.txt:3")
    expect.append(Expect(seq, "/input/0/content/1/image_url (base64 image/png)", "seeds.txt:1"))
    expect.append(Expect(seq, "/input/0/content/2/file_data (base64 application/pdf)",
                         SEALED_FILE[0]))
    events = oa.responses.create(model="gpt-test", input="lap t=31.5s", stream=True)
    streamed_text.append("".join(getattr(e, "delta", "") for e in events
                                 if e.type == "response.output_text.delta"))
    sent("/input", "times.csv:2")
    oa.files.create(file=("seed-3107713414.jsonl", b'{"label": "quorvantile"}\n'),
                    purpose="batch")
    sent("part file filename", "seeds.txt:1")
    expect.append(Expect(seq, "part file > /label", "labels.txt:3"))

    an = anthropic.Anthropic(base_url=base_url, api_key=KEYS["anthropic"], max_retries=0)

    def message(messages: list, **kw: object) -> None:
        an.messages.create(model="claude-test", max_tokens=64, messages=messages, **kw)

    hi = {"role": "user", "content": "fly the course"}
    message([hi], system="Reference step time 31.5 s.")
    sent("/system", "times.csv:2")
    message([hi, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "fly", "input": {"seed": 3107713414}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "label quorvantile"}]}])
    sent("/messages/1/content/0/input/seed", "seeds.txt:1")
    expect.append(Expect(seq, "/messages/2/content/0/content", "labels.txt:3"))
    message([hi], tools=[{"name": "label", "input_schema": {"type": "object", "properties": {
        "label": {"type": "string", "enum": ["quorvantile"]}}}}])
    sent("/tools/0/input_schema/properties/label/enum/0", "labels.txt:3")
    message([{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                        "data": pdf}}]}])
    sent("/messages/0/content/0/source/data (base64 image/png)", "seeds.txt:1")
    expect.append(Expect(seq, "/messages/0/content/1/source/data (base64 application/pdf)",
                         SEALED_FILE[0]))
    message([hi], extra_headers={"X-Run-Note": "lap 0:31.5"}, extra_query={"seed": "3107713414"})
    sent("header X-Run-Note", "times.csv:2")
    expect.append(Expect(seq, "target", "seeds.txt:1"))
    with an.messages.stream(model="claude-test", max_tokens=64, messages=[
            {"role": "user", "content": "the label: QUORVANTILE"}]) as s:
        streamed_text.append("".join(s.text_stream))
    sent("/messages/0/content", "labels.txt:3")

    gm = genai.Client(api_key=KEYS["gemini"], http_options=types.HttpOptions(
        base_url=base_url, api_version="v1beta", headers={"X-Run-Note": "run 4829163057"}))
    gm.models.generate_content(model="gemini-test", contents="label quorvantile")
    sent("/contents/0/parts/0/text", "labels.txt:3")
    expect.append(Expect(seq, "header X-Run-Note", "runs.txt:1"))
    gm.models.generate_content(model="gemini-test", contents="fly", config=types.GenerateContentConfig(
        system_instruction="the reference took 0:31.50",
        tools=[types.Tool(function_declarations=[types.FunctionDeclaration(
            name="label", parameters=types.Schema(type="OBJECT", properties={
                "label": types.Schema(type="STRING", enum=["quorvantile"])}))])]))
    sent("/systemInstruction/parts/0/text", "times.csv:2")
    expect.append(Expect(seq, "/tools/0/functionDeclarations/0/parameters/properties/label/enum/0",
                         "labels.txt:3"))
    expect.append(Expect(seq, "header X-Run-Note", "runs.txt:1"))
    gm.models.generate_content(model="gemini-test", contents=[types.Content(role="user", parts=[
        types.Part.from_bytes(data=SEALED_FILE[1], mime_type="application/pdf"),
        types.Part.from_function_response(name="fly", response={"seed": 3107713414})])])
    sent("/contents/0/parts/0/inlineData/data (base64 application/pdf)", SEALED_FILE[0])
    expect.append(Expect(seq, "/contents/0/parts/1/functionResponse/response/seed",
                         "seeds.txt:1"))
    expect.append(Expect(seq, "header X-Run-Note", "runs.txt:1"))
    streamed_text.append("".join(c.text or "" for c in gm.models.generate_content_stream(
        model="gemini-test", contents="gate  seven\nLEFT? quor vantile")))
    sent("/contents/0/parts/0/text", "phrases.txt:1")
    expect.append(Expect(seq, "header X-Run-Note", "runs.txt:1"))

    # the same shapes with near misses only
    clean = openai.OpenAI(base_url=base_url + "/v1", api_key=KEYS["openai"], max_retries=0)
    clean.chat.completions.create(model="gpt-test", messages=[
        {"role": "system", "content": NEAR_MISSES}, {"role": "user", "content": NEAR_MISSES}],
        extra_headers={"X-Run-Note": NEAR_MISSES[:40]}, extra_query={"lap": "131.5"})
    sent(None)
    clean.responses.create(model="gpt-test", input=NEAR_MISSES, stream=True).close()
    sent(None)
    an.messages.create(model="claude-test", max_tokens=64, system=NEAR_MISSES, messages=[
        {"role": "user", "content": [{"type": "text", "text": NEAR_MISSES}, {
            "type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": _b64(png_with("seed 31077134145"))}}]}])
    sent(None)
    plain = genai.Client(api_key=KEYS["gemini"], http_options=types.HttpOptions(
        base_url=base_url, api_version="v1beta"))
    plain.models.generate_content(model="gemini-test", contents=NEAR_MISSES)
    sent(None)
    return expect
