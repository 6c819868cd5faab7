"""Forward passes from several threads on one DF11 model, as a threaded web server makes them:
every caller gets its own correct logits (torch.equal to the BF16 model's), as with a BF16
model. The decode buffer is shared by all the blocks of a device, so without the device lock
the threads overwrite each other's weights between a decode and the matmuls that read it."""
import threading

import pytest
import torch

import df11
import models

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

THREADS = 4
CALLS = 12


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    work = tmp_path_factory.mktemp("threads")
    bf16_dir, df11_dir = str(work / "bf16"), str(work / "df11")
    # Blocks large enough (~3M weights) that the threads' decodes and matmuls overlap.
    from transformers import AutoConfig, AutoModelForCausalLM
    config = AutoConfig.for_model("llama", **dict(models.SMALL, hidden_size=512,
                                                  intermediate_size=1536, num_hidden_layers=3,
                                                  num_attention_heads=8, num_key_value_heads=4,
                                                  head_dim=64), tie_word_embeddings=False)
    torch.manual_seed(3)
    bf16 = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    models.randomize_small_params(bf16, 3)
    bf16.save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    ref = AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).eval()
    return ref, df11_dir


def run_threads(model, inputs):
    """Each thread calls model(ids) CALLS times on its own inputs; returns every result."""
    results = {i: [] for i in range(len(inputs))}
    errors = []
    start = threading.Barrier(len(inputs))

    def worker(i):
        try:
            start.wait()
            with torch.no_grad():
                for _ in range(CALLS):
                    results[i].append(model(input_ids=inputs[i]).logits)
        except BaseException as e:  # noqa: BLE001 (reported by the test)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


def test_threads_share_one_model_on_the_cpu(llama):
    check_threads(*llama)


def test_threads_share_one_moe_model_on_the_cpu(tmp_path):
    """The MoE family: its blocks decode whole (fused experts, rebuilt in the device's
    assembly buffer before each block's forward), not Linear by Linear."""
    from transformers import AutoModelForCausalLM
    bf16_dir, df11_dir = str(tmp_path / "bf16"), str(tmp_path / "df11")
    models.build_llm("qwen3moe").save_pretrained(bf16_dir)
    models.df11_compress(bf16_dir, df11_dir)
    check_threads(AutoModelForCausalLM.from_pretrained(bf16_dir, dtype=torch.bfloat16).eval(),
                  df11_dir)


def check_threads(ref, df11_dir):
    model = df11.from_pretrained(df11_dir, device="cpu")
    # Different lengths and contents per thread (24 tokens, as a server's prompts).
    inputs = [models.llm_inputs(ref.config.vocab_size, 1, length=24, seed=s)
              for s in range(THREADS)]
    with torch.no_grad():
        want = [ref(input_ids=ids).logits for ids in inputs]
    results, errors = run_threads(model, inputs)
    assert not errors, errors
    wrong = sum(not torch.equal(got, want[i]) for i in results for got in results[i])
    assert wrong == 0, f"{wrong} of {THREADS * CALLS} forward passes gave wrong logits"


def test_an_exception_in_a_block_releases_the_device(llama):
    """A forward pass that fails inside a block (here: a hook of the user's raising) leaves
    the device usable by the next caller, from another thread too."""
    ref, df11_dir = llama
    model = df11.from_pretrained(df11_dir, device="cpu")
    block = model.model.layers[1]

    def boom(module, args):
        raise RuntimeError("user hook")
    handle = block.register_forward_pre_hook(boom)
    ids = models.llm_inputs(ref.config.vocab_size, 1, length=8)
    with pytest.raises(RuntimeError, match="user hook"), torch.no_grad():
        model(input_ids=ids)
    handle.remove()
    results, errors = run_threads(model, [ids])
    assert not errors, errors
    with torch.no_grad():
        assert torch.equal(results[0][0], ref(input_ids=ids).logits)
