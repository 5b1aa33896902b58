"""What serves the model: the facts an answer's stamp records about the engine."""
