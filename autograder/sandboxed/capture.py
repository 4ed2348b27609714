"""What a running cell prints and displays, collected as nbformat outputs within the cell's budget."""

from __future__ import annotations


class CellOutputs:
    """The nbformat outputs of one cell, in order, within the cell's budget of ``max_lines`` lines and
    ``max_chars`` characters of printed and displayed text (the result of the last expression is cut on its own)."""

    def __init__(self, limits: dict, count: int):
        self.max_lines, self.max_chars = int(limits["max_lines"]), int(limits["max_chars"])
        self.count = count
        self._clear()

    def _clear(self) -> None:
        self.outputs: list[dict] = []
        self.lines = self.chars = self.dropped_lines = 0
        self.dropped = self.clear_pending = False
        self.display_ids: dict[str, dict] = {}

    def _keep(self, text: str) -> str:
        """The part of ``text`` the budget still allows (counted as spent); the rest is noted as dropped."""
        if self.clear_pending:
            self._clear()
        if self.dropped:
            self.dropped_lines += text.count("\n")
            return ""
        lines_left, chars_left = self.max_lines - self.lines, self.max_chars - self.chars
        if lines_left <= 0 or chars_left <= 0:
            keep = ""
        else:
            keep, cut = text[:chars_left], -1
            for _ in range(lines_left):  # cut just after the last newline the budget allows
                cut = keep.find("\n", cut + 1)
                if cut < 0:
                    break
            if cut >= 0:
                keep = keep[: cut + 1]
        if keep != text:
            self.dropped = True
            self.dropped_lines += text.count("\n") - keep.count("\n")
        self.lines += keep.count("\n")
        self.chars += len(keep)
        return keep

    def stream(self, name: str, text: str) -> None:
        text = self._keep(text)
        if not text:
            return
        last = self.outputs[-1] if self.outputs else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            last["text"].append(text)
        else:
            self.outputs.append({"output_type": "stream", "name": name, "text": [text]})

    def display(self, text, display_id=None, update: bool = False) -> None:
        """A ``display_data`` output (``update``: replace the text of the output shown with ``display_id``)."""
        if not isinstance(text, str):
            return  # no text/plain form: nothing the grader keeps
        if update:
            shown = self.display_ids.get(display_id)
            if shown is not None:
                shown["data"]["text/plain"] = text[: self.max_chars]
            return
        kept = self._keep(text + "\n")
        if not kept:
            return
        kept = kept[:-1] if kept.endswith("\n") and len(kept) == len(text) + 1 else kept + "..."
        output = {"output_type": "display_data", "data": {"text/plain": kept}, "metadata": {}}
        self.outputs.append(output)
        if display_id is not None:
            self.display_ids[display_id] = output

    def result(self, text) -> None:
        """The ``execute_result`` of the cell's last expression."""
        if self.clear_pending:
            self._clear()
        if not isinstance(text, str):
            return
        if len(text) > self.max_chars:
            text = text[: self.max_chars] + "..."
        data = {"text/plain": text}
        self.outputs.append(
            {"output_type": "execute_result", "execution_count": self.count, "metadata": {}, "data": data}
        )

    def error(self, output: dict) -> None:
        if self.clear_pending:
            self._clear()
        self.outputs.append(output)

    def clear(self, wait: bool = False) -> None:
        """``clear_output()``: forget what the cell showed so far (with ``wait``, when it next shows something)."""
        if wait:
            self.clear_pending = True
        else:
            self._clear()

    @property
    def failed(self) -> bool:
        return any(o["output_type"] == "error" for o in self.outputs)

    def finish(self) -> list[dict]:
        """The outputs, streams joined, with a note where the budget cut some."""
        outputs = [dict(o, text="".join(o["text"])) if o["output_type"] == "stream" else o for o in self.outputs]
        if self.dropped:
            note = f"\n... output truncated ({self.dropped_lines} more lines not kept) ...\n"
            for output in reversed(outputs):
                if output["output_type"] == "stream" and output["name"] == "stdout":
                    output["text"] += note
                    break
            else:
                outputs.append({"output_type": "stream", "name": "stdout", "text": note})
        return outputs


class Stream:
    """``sys.stdout`` or ``sys.stderr`` of a running cell: what is written goes to the cell's outputs."""

    def __init__(self, name: str, cell: CellOutputs):
        self.name, self._cell = name, cell
        self.encoding, self.errors = "utf-8", "replace"

    def write(self, text) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._cell.stream(self.name, text)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("this stream has no file descriptor")

    def readable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True
