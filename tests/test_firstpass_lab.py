"""benchmarks/firstpass_lab.py rebuilds recall's lexical first pass offline; its figures only
mean something while it ranks as the product does. Two small LoCoMo-shaped conversations
(one namespace each, so scope statistics and store-wide counts differ) are stored through the
real service and asked the same questions both ways: the lab's first-pass order and its order
after the shipped second pass must equal the service's.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import firstpass_lab as lab
from benchmarks.locomo import load, stored
from benchmarks.rerank_lab import first_pass_key

SESSIONS = {
    "conv-a": [
        [("Ann", "I finally adopted a rescue dog from the shelter last week"),
         ("Bob", "A dog! What breed is it and what did you name it?"),
         ("Ann", "She is a beagle mix, we call her Pepper, she loves the park"),
         ("Bob", "Pepper is a great name, my cat would be jealous"),
         ("Ann", "Haha, we walk to the lake park every morning now")],
        [("Bob", "I started pottery classes, my first bowl cracked in the kiln"),
         ("Ann", "Pottery sounds relaxing, will you try a vase next?"),
         ("Bob", "Maybe, the teacher says glazing a vase takes practice"),
         ("Ann", "Pepper chewed my running shoes yesterday, what a dog")],
    ],
    "conv-b": [
        [("Cy", "We flew to Rome for the marathon and I ran my best time"),
         ("Di", "Congrats on the marathon! Was Rome hot?"),
         ("Cy", "Very hot, but the crowd in Rome kept me running"),
         ("Di", "I only run in the park near my house, it is flat")],
        [("Di", "My sister opened a bakery, her sourdough is the best in town"),
         ("Cy", "A bakery! Does she bake bagels too?"),
         ("Di", "Bagels on weekends, and a lemon cake on Fridays"),
         ("Cy", "I should run there after the park loop")],
    ],
}
QUESTIONS = {
    "conv-a": [("What is the name of Ann's dog?", ["D1:3"], 4),
               ("What did Bob make in pottery class?", ["D2:1"], 4),
               ("Where does Ann walk her dog?", ["D1:5"], 1)],
    "conv-b": [("Which city did Cy run a marathon in?", ["D1:1"], 4),
               ("What does Di's sister bake?", ["D2:1", "D2:3"], 1),
               ("Where does Di run?", ["D1:4"], 3)],
}


def _sample(name: str) -> dict[str, object]:
    conversation: dict[str, object] = {"speaker_a": "", "speaker_b": ""}
    for n, turns in enumerate(SESSIONS[name], start=1):
        conversation[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
        conversation[f"session_{n}"] = [{"speaker": s, "dia_id": f"D{n}:{i}", "text": t}
                                        for i, (s, t) in enumerate(turns, start=1)]
    qa = [{"question": q, "answer": "", "evidence": ev, "category": c}
          for q, ev, c in QUESTIONS[name]]
    return {"sample_id": name, "conversation": conversation, "qa": qa}


async def test_the_lab_ranks_as_recall_does(tmp_path: Path) -> None:
    data = tmp_path / "locomo_mini.json"
    data.write_text(json.dumps([_sample("conv-a"), _sample("conv-b")]), encoding="utf-8")
    store = lab.build(data)
    ours: dict[str, tuple[list[str], list[str]]] = {}
    for conv in store.convs:
        for q in conv.questions:
            asked = lab.ask(store, conv, q)
            order = lab.ranked(conv, asked.x)
            second = lab.second_pass(asked, order, asked.x)
            ours[q.text] = ([conv.turns[i].dia_id for i in order],
                            [conv.turns[i].dia_id for i in second][:10])
    async with stored(load(data), "lab-check") as service:
        for sample in load(data):
            for question in sample.questions:
                found = await service.search(question.text, namespace=sample.namespace, limit=50,
                                             include_global=False, touch=False)
                first = [str(r.memory.metadata["dia_id"])
                         for r in sorted(found, key=first_pass_key, reverse=True)]
                final = [str(r.memory.metadata["dia_id"]) for r in found][:10]
                assert ours[question.text] == (first, final), question.text
