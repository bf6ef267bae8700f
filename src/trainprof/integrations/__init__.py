"""Optional bridges to the tools people already train with (`pip install "trainprof[integrations]"`).

    trainprof.integrations.tensorboard   TensorBoardWriter: Monitor metrics → TensorBoard
    trainprof.integrations.hf            TrainprofCallback for transformers.Trainer
    trainprof.integrations.lightning     TrainprofCallback for Lightning (lightning.pytorch)

Nothing in trainprof imports these modules; each imports its library itself, so this
package stays importable (and `import trainprof` stays cheap) without any of them.
Metric names and their meaning: docs/integrations.md.
"""
