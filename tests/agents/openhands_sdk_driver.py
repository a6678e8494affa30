"""Runs one OpenHands agent-SDK conversation against the scripted model (this file runs
in the SDK's own virtualenv, Python >= 3.12; the test starts it as a subprocess).

    python openhands_sdk_driver.py MODEL_URL WORKSPACE EVENTS_JSONL PERSISTENCE_DIR

Every event the conversation produces is appended to EVENTS_JSONL as one JSON line the
moment it happens (the callback an SDK user would write to stream events), and the SDK
persists its own per-event files under PERSISTENCE_DIR.
"""

import sys

from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.tools.file_editor import FileEditorTool
from openhands.tools.terminal import TerminalTool


def main() -> None:
    url, workspace, events, persistence = sys.argv[1:5]
    sink = open(events, "a", encoding="utf-8")

    def write(event) -> None:
        sink.write(event.model_dump_json() + "\n")
        sink.flush()

    llm = LLM(model="openai/scripted", base_url=url + "/v1", api_key="scripted", usage_id="agent")
    agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)])
    conversation = Conversation(agent=agent, workspace=workspace, persistence_dir=persistence,
                                callbacks=[write])
    conversation.send_message("Fix the module.")
    conversation.run()
    sink.close()


if __name__ == "__main__":
    main()
